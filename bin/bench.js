#!/usr/bin/env node
// `npm run bench`: speed targets measured on the lab (lab/bench.ts).
import { register } from 'tsx/esm/api';
register();
const { backupChild, main } = await import('../lab/bench.ts');
// `--backup-child ARGS`: the measured process of the backup figure (started by the bench itself).
process.exitCode = process.argv[2] === '--backup-child' ? await backupChild(process.argv[3]) : await main();
