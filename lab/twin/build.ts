// Bundles the twin into one executable script (esbuild). A lab host has no node on its PATH (a stock
// Debian 12 server has none): the script starts as a shell script that execs the lab's private Node.js
// (lab/twin/tools.ts) and, off a lab host, the `node` on the PATH; Node itself reads the second line as a
// string and a comment.
// Built at `lab up`/test time, never committed.
import { build } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAB_TOOLS_DIR } from './tools.ts';

const here = dirname(fileURLToPath(import.meta.url));

const TWIN_LOADER = `#!/bin/sh\n":" //; n=${LAB_TOOLS_DIR}/node; [ -x "$n" ] || n=node; exec "$n" "$0" "$@"`;

/** Builds the `k3s` executable and returns its path (in `outDir`, or a fresh temporary directory). */
export async function buildTwin(outDir?: string): Promise<string> {
  const dir = outDir ?? mkdtempSync(join(tmpdir(), 'k3s-twin-'));
  mkdirSync(dir, { recursive: true });
  const out = join(dir, 'k3s');
  await build({
    entryPoints: [join(here, 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: out,
    banner: { js: TWIN_LOADER },
    logLevel: 'warning',
  });
  chmodSync(out, 0o755);
  return out;
}

/** Puts the twin into the lab's artifacts folder as `k3s`, where the engine's air-gap path picks it up. */
export async function installTwin(artifactsDir: string): Promise<string> {
  const built = await buildTwin();
  mkdirSync(artifactsDir, { recursive: true });
  const dest = join(artifactsDir, 'k3s');
  // Copied then renamed, so a reader never sees half a file.
  copyFileSync(built, `${dest}.new`);
  chmodSync(`${dest}.new`, 0o755);
  renameSync(`${dest}.new`, dest);
  rmSync(dirname(built), { recursive: true, force: true });
  return dest;
}
