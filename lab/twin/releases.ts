// The k3s releases the lab's twin can be built as. Each is a real k3s release: its tag, the Go it was built
// with, and the etcd it embeds, as upstream records them (sources below and in lab/TWIN.md, "Releases").
// The twin's etcd is Debian's underneath (lab/twin/etcd/process.ts); a release only changes what the twin
// claims: `k3s --version`, the etcd module lines in its file, etcd's start line in the journal.

export interface TwinRelease {
  /** The k3s tag, as `k3s --version` prints it. */
  version: string;
  /** The commit `k3s --version` prints in brackets: the twin's stand-in, not upstream's commit. */
  commit: string;
  /** The Go toolchain of the release (`go version …`, etcd's `go-version`). */
  go: string;
  /** etcd's own version, as its start line reports it (`"etcd-version":"3.5.21"`). */
  etcd: string;
  /**
   * go.etcd.io/etcd/server/v3 in k3s's go.mod: the version `require`d (the `dep` line of Go's module info)
   * and k3s's fork that `replace`s it (the `=>` line), which is the etcd actually linked.
   */
  etcdModule: { require: string; replace: string };
}

const K3S_ETCD_FORK = 'github.com/k3s-io/etcd/server/v3';
const ETCD_SERVER_MODULE = 'go.etcd.io/etcd/server/v3';

/**
 * - v1.33.5+k3s1: etcd v3.5.21-k3s1, Go 1.24.6 (k3s-io/docs `docs/release-notes/v1.33.X.md`). The go.mod
 *   `require` version is not confirmed; v3.5.21 assumed.
 * - v1.33.7+k3s3: the first 1.33 release seen with etcd 3.5.26, the only version etcd supports upgrading
 *   to 3.6 from (k3s-io/k3s pull 13493, discussion 14908). Its go.mod (kubernetes v1.33.7-k3s3, go 1.24.11)
 *   requires go.etcd.io/etcd/server/v3 v3.6.7 and replaces it with the fork's v3.5.26-k3s1.
 * - v1.34.1+k3s1: the first 1.34 release, already on etcd 3.6: v3.6.4-k3s3, Go 1.24.6 (k3s-io/docs
 *   `docs/release-notes/v1.34.X.md`). The go.mod `require` version is not confirmed; v3.6.4 assumed.
 */
export const TWIN_RELEASES: readonly TwinRelease[] = [
  { version: 'v1.33.5+k3s1', commit: '8e8f2a47', go: 'go1.24.6', etcd: '3.5.21', etcdModule: { require: 'v3.5.21', replace: 'v3.5.21-k3s1' } },
  { version: 'v1.33.7+k3s3', commit: '3c1e5a9b', go: 'go1.24.11', etcd: '3.5.26', etcdModule: { require: 'v3.6.7', replace: 'v3.5.26-k3s1' } },
  { version: 'v1.34.1+k3s1', commit: '5d0c2b7e', go: 'go1.24.6', etcd: '3.6.4', etcdModule: { require: 'v3.6.4', replace: 'v3.6.4-k3s3' } },
];

/** The release `lab up` installs as the artifacts folder's `k3s` and the lab inventory names. */
export const DEFAULT_TWIN_RELEASE = TWIN_RELEASES[0];

export function twinRelease(version: string): TwinRelease {
  const r = TWIN_RELEASES.find((x) => x.version === version);
  if (!r) throw new Error(`no twin release ${version} (known: ${TWIN_RELEASES.map((x) => x.version).join(', ')})`);
  return r;
}

/**
 * The etcd lines of Go's module info for `r`, as Go writes them into a binary (golang/go commit 0c460ad0
 * `src/runtime/debug/mod.go`, BuildInfo.String): a replaced module is `dep<TAB>path<TAB>version`, then
 * `=><TAB>path<TAB>version<TAB>sum`. The sum is left empty, as a `-mod=vendor` build leaves it: the twin
 * does not know the fork's real h1: hash.
 */
export function etcdModuleLines(r: TwinRelease): string {
  return `dep\t${ETCD_SERVER_MODULE}\t${r.etcdModule.require}\n=>\t${K3S_ETCD_FORK}\t${r.etcdModule.replace}\t\n`;
}
