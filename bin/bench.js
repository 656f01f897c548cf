#!/usr/bin/env node
// `npm run bench`: speed targets measured on the lab (lab/bench.ts).
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../lab/bench.ts');
process.exitCode = await main();
