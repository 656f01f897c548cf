// Pure: is going from the k3s release each server runs to the inventory's release a step k3s supports?
// The rules, from k3s's own documentation and release notes:
// - no downgrade: k3s's upgrade documentation supports upgrades only (k3s-io/docs docs/upgrades);
// - no skipped minor: "Ensure that your plan does not skip intermediate minor versions" (k3s-io/docs
//   docs/upgrades/manual.md), the Kubernetes version skew policy behind it;
// - the etcd waypoint: a cluster must run etcd 3.5.26 or later before it moves to a release with etcd 3.6
//   (k3s-io/k3s issue #13485 and the 3.5.26 bumps of PRs #13493/#13494). A k3s minor line can cross to etcd
//   3.6 at a patch release, so the rule is judged on the etcd versions the binaries carry, never on the k3s
//   version.
// Which etcd a server runs is what etcd said when k3s last started it: its start line in k3s's journal
// (etcd-io/etcd server/embed/etcd.go print(): msg "starting an etcd server", field "etcd-version"), else the
// Go module information of the k3s binary unpacked on the host (golang/go src/runtime/debug/mod.go
// BuildInfo.String: a replaced module is `dep <path> <required version>` then `=> <fork> <linked version>`, so
// the k3s-io fork's line is the etcd linked in; the dep line's version is only what go.mod requires). Which
// etcd the target release carries comes from k3s's release notes (the published binary is a wrapper whose
// payload is compressed, so no module line can be read from it), else from a binary that shows its lines.
import { CauseError } from '../errors.ts';
import { versionFromOutput } from '../backup/version.ts';

interface K3sVersion {
  major: number;
  minor: number;
  patch: number;
  /** The k3s build (the N of +k3sN). */
  build: number;
  text: string;
}

/** `v1.33.5+k3s1` (an -rcN is allowed, as k3s.version's schema allows); undefined for anything else. */
function parseK3sVersion(text: string): K3sVersion | undefined {
  const m = /^v(\d+)\.(\d+)\.(\d+)(?:-rc\d+)?\+k3s(\d+)$/.exec(text.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), build: Number(m[4]), text: text.trim() };
}

/** Negative when a is older than b. */
function compareK3s(a: K3sVersion, b: K3sVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch || a.build - b.build;
}

const FORK = /github\.com\/k3s-io\/etcd\/server\/v3\s+v(\d+\.\d+\.\d+)/;
const UPSTREAM_MODULE = /go\.etcd\.io\/etcd\/server\/v3\s+v(\d+\.\d+\.\d+)/;
const START_LINE = /"etcd-version":"(\d+\.\d+\.\d+)"/;

/** The shell that prints what a server says of its etcd: the journal's last start line's version, then the module lines of its binaries. */
export function runningEtcdProbe(unit: string, binaries: string[]): string {
  return [
    `journalctl -u ${unit} -o cat --no-pager -n 50000 2>/dev/null | grep -o '"etcd-version":"[0-9.]*"' | tail -n1`,
    `for f in ${binaries.join(' ')}; do [ -f "$f" ] && grep -a -o -m2 -E '(go\\.etcd\\.io|github\\.com/k3s-io/etcd)/server/v3[[:space:]]+v[0-9.]+' "$f"; done | head -n4`,
  ].join('; ');
}

/** The etcd version in what a server or binary says (`3.5.21`): the start line, else the fork's module line, else the upstream module line. */
export function etcdVersionIn(text: string): string | undefined {
  return START_LINE.exec(text)?.[1] ?? FORK.exec(text)?.[1] ?? UPSTREAM_MODULE.exec(text)?.[1];
}

/**
 * The etcd a k3s release embeds, from k3s's release notes (k3s-io/docs docs/release-notes/v1.33.X.md at commit
 * 143463bb, v1.34.X.md at 0887158f; the 3.5.26 of v1.33.7+k3s3 from k3s-io/k3s PR #13493): exact where the notes
 * name it; "3.6.0" stands for "3.6 or later" from v1.34 on, the first line that embeds etcd 3.6. Undefined: not known.
 */
export function releaseEtcd(version: string): string | undefined {
  const v = parseK3sVersion(version);
  if (!v || v.major !== 1) return undefined;
  const exact: Record<string, string> = { 'v1.33.7+k3s1': '3.5.25', 'v1.33.7+k3s3': '3.5.26', 'v1.34.1+k3s1': '3.6.4', 'v1.34.2+k3s1': '3.6.5' };
  if (exact[v.text]) return exact[v.text];
  if (v.minor === 33 && v.patch <= 6) return '3.5.21';
  if (v.minor >= 34) return '3.6.0';
  return undefined;
}

/** -1, 0, 1 for two dotted versions (`3.5.26` against `3.6.0`). */
function compareDotted(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

/** The last etcd 3.5 a cluster must run before an etcd 3.6 release (k3s-io/k3s issue #13271). */
const ETCD_WAYPOINT = '3.5.26';

export interface RunningRelease {
  host: string;
  /** What `k3s --version` printed on the host, first line. */
  versionLine: string;
  /** The etcd version its binary carries, when found. */
  etcd?: string;
}

export interface TargetRelease {
  version: string;
  etcd?: string;
}

const where = (r: RunningRelease) => `${r.host}: ${r.versionLine || '(no version line)'}${r.etcd ? `, etcd ${r.etcd}` : ''}`;

/**
 * The stops that forbid going from what the servers run to the target: one per rule broken, naming every
 * server that breaks it and the path to take instead. Empty when every step is safe (or nothing changes).
 */
export function pathStops(running: RunningRelease[], target: TargetRelease): CauseError[] {
  const to = parseK3sVersion(target.version);
  if (!to) return [];
  const seen = running.map((r) => ({ r, v: parseK3sVersion(versionFromOutput(r.versionLine) ?? '') }));
  const stops: CauseError[] = [];
  const unknown = seen.filter((s) => !s.v);
  if (unknown.length) {
    stops.push(
      new CauseError('K3S_VERSION_UNKNOWN', {
        host: unknown.map((s) => s.r.host).join(', '),
        evidence: { command: 'k3s --version', seen: unknown.map((s) => where(s.r)).join('; ') },
      }),
    );
  }
  const known = seen.filter((s): s is { r: RunningRelease; v: K3sVersion } => !!s.v);
  const newer = known.filter((s) => compareK3s(s.v, to) > 0);
  if (newer.length) {
    stops.push(
      new CauseError('K3S_DOWNGRADE_REFUSED', {
        host: newer.map((s) => s.r.host).join(', '),
        message: `k3s.version ${to.text} is older than what ${newer.map((s) => s.r.host).join(', ')} run${newer.length === 1 ? 's' : ''}`,
        evidence: { command: 'k3s --version', seen: `${newer.map((s) => where(s.r)).join('; ')}; k3s.version ${to.text}` },
      }),
    );
  }
  const skipping = known.filter((s) => s.v.major === to.major && to.minor > s.v.minor + 1);
  if (skipping.length) {
    const lowest = Math.min(...skipping.map((s) => s.v.minor));
    const steps = Array.from({ length: to.minor - lowest - 1 }, (_, i) => `v${to.major}.${lowest + 1 + i}`);
    stops.push(
      new CauseError('K3S_MINOR_SKIPPED', {
        host: skipping.map((s) => s.r.host).join(', '),
        message: `k3s.version ${to.text} skips ${steps.join(', ')}: upgrade through ${steps.map((s) => `the latest ${s}.x`).join(', then ')} first`,
        evidence: { command: 'k3s --version', seen: `${skipping.map((s) => where(s.r)).join('; ')}; k3s.version ${to.text}` },
      }),
    );
  }
  const moving = known.filter((s) => compareK3s(s.v, to) < 0);
  const early = moving.filter((s) => s.r.etcd !== undefined && compareDotted(s.r.etcd, ETCD_WAYPOINT) < 0);
  const noEtcd = moving.filter((s) => s.r.etcd === undefined);
  if ((early.length || noEtcd.length) && target.etcd === undefined) {
    stops.push(
      new CauseError('ETCD_VERSION_UNKNOWN', {
        message: `which etcd ${to.text} embeds is not known (not in the release notes the tool carries, no module line in the binary), and ${[...early, ...noEtcd].map((s) => s.r.host).join(', ')} may need the etcd ${ETCD_WAYPOINT} waypoint first`,
        evidence: {
          command: "grep -a 'k3s-io/etcd/server/v3' <k3s.artifacts>/k3s",
          seen: `${[...early, ...noEtcd].map((s) => where(s.r)).join('; ')}; no etcd version known for ${to.text}`,
        },
      }),
    );
  } else if (target.etcd !== undefined && compareDotted(target.etcd, '3.6.0') >= 0) {
    const brings = target.etcd === '3.6.0' ? 'etcd 3.6 or later' : `etcd ${target.etcd}`;
    if (noEtcd.length)
      stops.push(
        new CauseError('ETCD_VERSION_UNKNOWN', {
          host: noEtcd.map((s) => s.r.host).join(', '),
          message: `${to.text} brings ${brings}, and which etcd ${noEtcd.map((s) => s.r.host).join(', ')} run${noEtcd.length === 1 ? 's' : ''} is not known (no etcd start line in the journal, no module line in a binary), so the etcd ${ETCD_WAYPOINT} waypoint cannot be judged`,
          evidence: {
            command: "journalctl -u k3s | grep etcd-version; grep -a 'k3s-io/etcd/server/v3' <k3s binaries>",
            seen: noEtcd.map((s) => where(s.r)).join('; '),
          },
        }),
      );
    if (early.length)
      stops.push(
        new CauseError('ETCD_WAYPOINT_REQUIRED', {
          host: early.map((s) => s.r.host).join(', '),
          message: `k3s.version ${to.text} brings ${brings}; ${early.map((s) => s.r.host).join(', ')} run${early.length === 1 ? 's' : ''} etcd ${[...new Set(early.map((s) => s.r.etcd))].join(', ')}: upgrade first to a k3s release of the v${early[0].v.major}.${early[0].v.minor} line with etcd ${ETCD_WAYPOINT} or later${early[0].v.minor === 33 ? ' (v1.33.7+k3s3 or later)' : ''}`,
          evidence: {
            command: 'k3s --version; journalctl -u k3s | grep etcd-version',
            seen: `${early.map((s) => where(s.r)).join('; ')}; k3s.version ${to.text} brings ${brings}`,
          },
        }),
      );
  }
  return stops;
}
