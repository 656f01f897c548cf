#!/usr/bin/env node
// Entry point. `npm ci` bundles the CLI into dist/ (its `prepare` script: scripts/build.mjs), which starts
// in a fraction of the time tsx takes to compile the sources. The bundle runs only while it is current:
// every source file it was built from still has the mtime and size its stamp.json recorded. Otherwise (a
// source edited or pulled since, no bundle, or BOOTSTRAP_FROM_SOURCE=1, which the tests set) the
// TypeScript sources run through tsx, as before: a stale bundle never runs.
// BOOTSTRAP_BUNDLE_DIR names another bundle folder (the startup test and the bench build one of their own).
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// With its trailing slash: the stamp's paths are appended to it (a join per file costs more than the stat).
const root = fileURLToPath(new URL('..', import.meta.url));

/** The bundle's entry file when the bundle is current, else undefined. */
function currentBundle() {
  if (process.env.BOOTSTRAP_FROM_SOURCE === '1') return undefined;
  const dir = process.env.BOOTSTRAP_BUNDLE_DIR || join(root, 'dist');
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(join(dir, 'stamp.json'), 'utf8'));
  } catch {
    return undefined;
  }
  for (const [file, [mtimeMs, size]] of Object.entries(stamp.inputs)) {
    const st = statSync(root + file, { throwIfNoEntry: false });
    if (!st || st.mtimeMs !== mtimeMs || st.size !== size) return undefined;
  }
  return join(dir, stamp.entry);
}

const bundle = currentBundle();
let main;
if (bundle) {
  ({ main } = await import(pathToFileURL(bundle).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
