#!/usr/bin/env node
// `npm run demo`: boots the lab and builds the cluster on it (lab/demo.ts).
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../lab/demo.ts');
process.exitCode = await main();
