#!/usr/bin/env node
// `npm run bench`: speed and memory targets measured on the lab (lab/bench.ts); `npm run bench -- scale` adds
// the 3 servers + 27 agents figures; `npm run bench -- startup`: the startup figure alone (`bootstrap --help`),
// which needs no lab.
import { register } from 'tsx/esm/api';
register();
const { main, startup } = await import('../lab/bench.ts');
if (process.argv[2] === 'startup') process.exitCode = startup() ? 0 : 1;
else process.exitCode = await main(process.argv.slice(2));
