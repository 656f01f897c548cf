#!/usr/bin/env node
// `npm run lab -- <command>`: TypeScript is loaded through tsx, as for bin/bootstrap.js.
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../lab/cli.ts');
process.exitCode = await main(process.argv.slice(2));
