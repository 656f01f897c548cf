#!/usr/bin/env node
// Entry point: TypeScript is loaded through tsx so `npm ci` is the whole install (no build step).
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
