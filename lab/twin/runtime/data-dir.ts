// What k3s unpacks into its data dir on first use (k3s-io/k3s cmd/k3s/main.go extract): the binaries under
// <data-dir>/data/<hash>/bin, and the symlink <data-dir>/data/current to that folder. The twin puts there the
// two it has: the runc shim (a link to the twin itself, which runs containers) and crictl (the twin's crictl
// bundled apart, a small script: `k3s crictl` execs it, see ./build.ts's loader).
import { lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { shimPath } from './tasks.ts';

/** The crictl script, put into the bundle by ./build.ts (esbuild `define`); absent when the twin runs from its sources. */
declare const TWIN_CRICTL_SCRIPT: string | undefined;
const crictlScript = (): string | undefined => (typeof TWIN_CRICTL_SCRIPT === 'string' ? TWIN_CRICTL_SCRIPT : undefined);

/** `link` → `target`, replaced only when it points elsewhere. */
function ensureLink(link: string, target: string): void {
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === target) return;
    rmSync(link, { force: true });
  } catch {
    /* not there yet */
  }
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(target, link);
}

/** Unpacks the twin's binaries into `dataDir` (idempotent) and returns the shim's path. */
export function unpackBinaries(dataDir: string): string {
  const shim = shimPath(dataDir);
  const bin = dirname(shim);
  ensureLink(shim, realpathSync(process.argv[1]!));
  const script = crictlScript();
  if (script) {
    const crictl = join(bin, 'crictl');
    let same = false;
    try {
      same = readFileSync(crictl, 'utf8') === script;
    } catch {
      /* not there yet */
    }
    if (!same) {
      // Written aside and renamed: a `k3s crictl` meanwhile runs the old script or the new, never half of one.
      writeFileSync(`${crictl}.new`, script, { mode: 0o755 });
      renameSync(`${crictl}.new`, crictl);
    }
  }
  ensureLink(join(dataDir, 'data', 'current'), dirname(bin));
  return shim;
}
