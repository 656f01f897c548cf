// etcd names its version in its start line (etcd-io/etcd commit 005ef87b `server/embed/etcd.go`, print():
// msg "starting an etcd server", fields "etcd-version", "git-sha", "go-version", …). k3s writes the embedded
// etcd's zap JSON lines to its journal unchanged, so `journalctl -u k3s | grep etcd-version` shows the
// release's etcd (k3s-io/k3s issue 11197: `"etcd-version":"3.5.16","git-sha":"HEAD","go-version":"go1.22.8"`).
// The twin's etcd is Debian's, which reports its own version there; the twin rewrites those three values to
// its release's, leaving the rest of the line (and every other line) as etcd wrote it.
import type { TwinRelease } from '../releases.ts';

const START_MSG = '"msg":"starting an etcd server"';

/** `line` with the release's etcd version, git sha and Go version when it is etcd's start line; else `line`. */
export function claimEtcdRelease(line: string, r: Pick<TwinRelease, 'etcd' | 'go'>): string {
  if (!line.includes(START_MSG)) return line;
  // k3s's builds report git-sha "HEAD" (issue 11197), not etcd's commit.
  const values: Record<string, string> = { 'etcd-version': r.etcd, 'git-sha': 'HEAD', 'go-version': r.go };
  return line.replace(/"(etcd-version|git-sha|go-version)":"(?:[^"\\]|\\.)*"/g, (_m, key: string) => `"${key}":${JSON.stringify(values[key])}`);
}
