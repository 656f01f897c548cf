// Naming a k3s failure from its journal: k3s's own messages mapped to causes. Pure; newer and older
// wordings both match. Each rule's upstream line, under its source (k3s-io/k3s v1.33.5+k3s1
// pkg/cluster/bootstrap.go, pkg/clientaccess/token.go, pkg/cluster/storage.go, pkg/etcd/etcd.go,
// pkg/agent/config/config.go; etcd-io/etcd v3.5.26 for etcd's own), is in
// test/fixtures/upstream-lines/k3s.txt; test/unit/cause-matchers-exercised.test.ts checks each matches.
import type { CauseId } from '../causes/catalogue.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

export interface JournalMatch {
  id: CauseId;
  /**
   * k3s retries these itself (in-process every second: "Waiting for other members to finish joining etcd
   * cluster: …"; before 2023 by exiting and restarting) and they often clear: etcd refuses a member while a
   * newly promoted one is not yet counted healthy. Named only when they persist.
   */
  transient?: boolean;
  /** The line that matched. */
  line: string;
  /** e.g. the critical flag that differs. */
  detail?: string;
}

/**
 * The flag an operator sets for what k3s names in "critical configuration mismatched: <name>" (k3s-io/k3s
 * v1.33.5+k3s1 pkg/cluster/bootstrap.go compareConfig): the `cli` tag of a CriticalControlArgs field
 * (pkg/daemons/config/types.go), or, for a diff inside a slice or a *net.IPNet, the Go field path
 * (`ClusterIPRanges.slice[0].IP`, `ServiceIPRange.Mask.slice[2]`, `ClusterDNSs.slice[0]`).
 */
function criticalFlag(name: string): string {
  const field = name.split('.')[0];
  const byField: Record<string, string> = {
    ClusterIPRange: 'cluster-cidr',
    ClusterIPRanges: 'cluster-cidr',
    ServiceIPRange: 'service-cidr',
    ServiceIPRanges: 'service-cidr',
    ClusterDNS: 'cluster-dns',
    ClusterDNSs: 'cluster-dns',
  };
  if (byField[field]) return byField[field];
  // servicelb is switched off through `disable: [servicelb]`, which k3s holds as DisableServiceLB.
  if (name === 'disable-service-lb') return 'disable: [servicelb]';
  return name;
}

/** The journal rules, most specific first (each backed by an upstream line: UPSTREAM_PATTERNS below). */
const RULES: { id: CauseId; re: RegExp; detail?: (m: RegExpMatchArray) => string; transient?: boolean }[] = [
  { id: 'CRITICAL_CONFIG_MISMATCH', re: /critical configuration mismatched: ([\w.[\]-]+)/, detail: (m) => criticalFlag(m[1]) },
  { id: 'CRITICAL_CONFIG_MISMATCH', re: /critical configuration value mismatch|unable to join cluster due to critical configuration value mismatch/ },
  { id: 'TOKEN_MALFORMED', re: /invalid token format|invalid token CA hash length|failed to normalize server token/ },
  { id: 'TOKEN_CA_MISMATCH', re: /token CA hash does not match/ },
  // A wrong password with the right CA hash: a joining server's bootstrap request is refused (its config
  // request was refused first, which k3s only warns about); an agent's config request is refused, retried.
  {
    id: 'TOKEN_REJECTED',
    re: /\/v1-k3s\/server-bootstrap: 401 Unauthorized|failed to retrieve configuration from server: \S+\/v1-k3s\/config: 401 Unauthorized|bootstrap data already found and encrypted with different token/,
  },
  { id: 'JOIN_FOUNDER_UNREACHABLE', re: /failed to get CA certs/ },
  { id: 'DUPLICATE_NODE_NAME', re: /duplicate node name found/ },
  { id: 'NODE_PASSWORD_REJECTED', re: /Node password rejected/ },
  { id: 'ETCD_PEER_UNREACHABLE', re: /cannot fetch cluster info from peer urls|dial tcp [\d.]+:2380: connect: connection refused/ },
  { id: 'ETCD_CLUSTER_UNHEALTHY', re: /etcdserver: unhealthy cluster/, transient: true },
  { id: 'ETCD_CLUSTER_UNHEALTHY', re: /etcdserver: too many learner members in cluster/, transient: true },
  // The server joined could not read etcd's member list for /db/info (k3s asks for it linearizably: it
  // needs quorum); k3s retries every second. The gate then asks whether quorum is lost (join-quorum.ts).
  { id: 'ETCD_CLUSTER_UNHEALTHY', re: /Waiting to retrieve etcd cluster member list: .*failed to get etcd MemberList/, transient: true },
];

/**
 * k3s logs every difference, in struct order, and ClusterDNS comes first. Unset (bootstrap never sets it),
 * cluster-dns is derived from service-cidr (the tenth address: k3s-io/k3s pkg/cli/server/server.go), so
 * another service-cidr differs in ClusterDNS too: name the flag the operator set when a line names it.
 */
function preferredMismatch(text: string, re: RegExp): RegExpMatchArray | undefined {
  const all = [...text.matchAll(new RegExp(re.source, 'g'))];
  return all.find((m) => criticalFlag(m[1]) !== 'cluster-dns') ?? all[0];
}

/** k3s started its etcd member after etcd's refusals (pkg/etcd/etcd.go join): they cleared. */
const JOIN_STARTED = /Starting etcd to join cluster with members/;

/** k3s's first line at each start: only what follows the last one counts. */
const START_LINE = /Starting k3s v/g;

/**
 * The known failure in the journal lines (the most specific rule wins, not the first line). Only the
 * journal since the LAST start of k3s counts: an earlier attempt's failure may since have cleared.
 */
export function matchJoinFailure(journal: string): JournalMatch | undefined {
  const starts = [...journal.matchAll(START_LINE)];
  const lastStart = starts.length > 1 ? journal.lastIndexOf('\n', starts.at(-1)!.index) : -1;
  const recent = journal.slice(lastStart + 1);
  const lines = recent.split('\n');
  // k3s retries etcd's refusals in-process: once it started its etcd member after them, they cleared.
  let progress = -1;
  lines.forEach((l, i) => JOIN_STARTED.test(l) && (progress = i));
  for (const rule of RULES) {
    for (const line of rule.transient ? lines.slice(progress + 1) : lines) {
      const m = line.match(rule.re);
      if (m) {
        // A later, more specific line may name the flag ("mismatched: cluster-cidr"): prefer it.
        const detailed = rule.detail ? rule : RULES.find((r) => r.id === rule.id && r.detail && recent.match(r.re));
        if (detailed) {
          const dm = preferredMismatch(recent, detailed.re);
          if (!dm) return { id: rule.id, line: line.trim(), transient: rule.transient };
          const shown = rule.detail ? (lines.find((l) => l.includes(dm[0])) ?? line).trim() : dm[0];
          return { id: rule.id, line: shown, detail: detailed.detail!(dm), transient: rule.transient };
        }
        return { id: rule.id, line: line.trim(), detail: rule.detail?.(m), transient: rule.transient };
      }
    }
  }
  return undefined;
}

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { RULES: RULES.map((r) => r.re), START_LINE, JOIN_STARTED };
