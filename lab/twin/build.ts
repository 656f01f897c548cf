// Bundles the twin into one executable script (esbuild). A lab host has no node on its PATH (a stock
// Debian 12 server has none): the script starts as a shell script that execs the lab's private Node.js
// (lab/twin/tools.ts) and, off a lab host, the `node` on the PATH; Node itself reads the second line as a
// string and a comment.
// Each bundle is one k3s release (./releases.ts): the release is compiled in, so two files in two artifacts
// folders claim two versions side by side. Built at `lab up`/test time, never committed.
import { build, type Plugin } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TWIN_RELEASE, TWIN_RELEASES, etcdModuleLines, type TwinRelease } from './releases.ts';
import { LAB_TOOLS_DIR } from './tools.ts';

const here = dirname(fileURLToPath(import.meta.url));

// The executable's first lines: a shell header that is also a JavaScript comment. `k3s kubectl …` goes straight
// to the kubectl it runs (what lab/twin/kubectl.ts does, KUBECONFIG defaulting to k3s.yaml when unset), without
// starting Node and compiling the whole twin: real k3s's kubectl is in its own Go binary and starts in tens of
// milliseconds, where loading the twin cost a few hundred of CPU per call, on every poll of every lab.
// `k3s crictl …` likewise execs the crictl the twin unpacked into its data dir (./runtime/data-dir.ts), as real
// k3s execs the one it unpacked (k3s-io/k3s cmd/k3s/main.go externalCLI); before the twin has unpacked it, the
// whole twin answers.
const NODE_EXEC = `n=${LAB_TOOLS_DIR}/node; [ -x "$n" ] || n=node; exec "$n" "$0" "$@"`;
const TWIN_LOADER =
  '#!/bin/sh\n":" //; ' +
  `if [ "$1" = kubectl ] && [ -x ${LAB_TOOLS_DIR}/kubectl ]; then shift; KUBECONFIG="\${KUBECONFIG-/etc/rancher/k3s/k3s.yaml}" exec ${LAB_TOOLS_DIR}/kubectl "$@"; fi; ` +
  `c=/var/lib/rancher/k3s/data/current/bin/crictl; if [ "$1" = crictl ] && [ -x "$c" ]; then shift; exec "$c" "$@"; fi; ` +
  NODE_EXEC;

/** The twin's crictl on its own (./crictl-main.ts), a script that starts the lab's Node as the twin does. */
async function crictlScript(): Promise<string> {
  const out = await build({
    entryPoints: [join(here, 'crictl-main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    banner: { js: `#!/bin/sh\n":" //; ${NODE_EXEC}` },
    logLevel: 'warning',
  });
  return out.outputFiles[0].text;
}

/**
 * A real k3s binary carries Go's module info, where the etcd it links shows as k3s's fork of
 * go.etcd.io/etcd/server/v3; the bundle carries the same lines in a trailing comment, so a reader of the
 * file's bytes (`grep -a`) finds them. Nothing at run time reads them.
 */
function moduleInfoComment(r: TwinRelease): string {
  return `/* Go module info of k3s ${r.version} (its etcd):\n${etcdModuleLines(r)}*/`;
}

/** Replaces ./built-release.ts with `r` alone, so the bundle holds no other release's versions. */
function builtRelease(r: TwinRelease): Plugin {
  return {
    name: 'twin-release',
    setup(b) {
      b.onResolve({ filter: /\/built-release\.ts$/ }, (a) => ({ path: a.path, namespace: 'twin-release' }));
      b.onLoad({ filter: /.*/, namespace: 'twin-release' }, () => ({ contents: `export const RELEASE = ${JSON.stringify(r)};`, loader: 'ts' }));
    },
  };
}

/** Builds the `k3s` executable of `release` and returns its path (in `outDir`, or a fresh temporary directory). */
export async function buildTwin(outDir?: string, release: TwinRelease = DEFAULT_TWIN_RELEASE): Promise<string> {
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
    footer: { js: moduleInfoComment(release) },
    define: { TWIN_CRICTL_SCRIPT: JSON.stringify(await crictlScript()) },
    plugins: [builtRelease(release)],
    logLevel: 'warning',
  });
  chmodSync(out, 0o755);
  return out;
}

/**
 * The artifacts folder (a folder holding `k3s`, as an inventory's k3s.artifacts wants) of a release that
 * installTwin put under `artifactsDir`: the default release is `artifactsDir` itself, the others
 * `artifactsDir/releases/<version>`.
 */
export function releaseArtifacts(artifactsDir: string, version: string): string {
  return version === DEFAULT_TWIN_RELEASE.version ? artifactsDir : join(artifactsDir, 'releases', version);
}

async function installRelease(artifactsDir: string, release: TwinRelease): Promise<string> {
  const built = await buildTwin(undefined, release);
  const dir = releaseArtifacts(artifactsDir, release.version);
  mkdirSync(dir, { recursive: true });
  const dest = join(dir, 'k3s');
  // Copied then renamed, so a reader never sees half a file.
  copyFileSync(built, `${dest}.new`);
  chmodSync(`${dest}.new`, 0o755);
  renameSync(`${dest}.new`, dest);
  rmSync(dirname(built), { recursive: true, force: true });
  return dest;
}

/**
 * Puts the twin into the lab's artifacts folder as `k3s` (the default release, where the engine's air-gap
 * path picks it up) and every other release as `releases/<version>/k3s`, for tests of upgrades and of
 * version checks. Returns the default release's `k3s`.
 */
export async function installTwin(artifactsDir: string): Promise<string> {
  const [dest] = await Promise.all(
    [DEFAULT_TWIN_RELEASE, ...TWIN_RELEASES.filter((r) => r !== DEFAULT_TWIN_RELEASE)].map((r) => installRelease(artifactsDir, r)),
  );
  return dest;
}
