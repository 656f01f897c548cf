// Naming a k3s failure from its journal: k3s's own messages (upstream-facts.md, "Failure messages")
// mapped to causes. Pure; newer and older wordings both match.
import type { CauseId } from '../../src/causes/catalogue.ts';

export interface JournalMatch {
  id: CauseId;
  /** The line that matched. */
  line: string;
  /** e.g. the critical flag that differs. */
  detail?: string;
}

const RULES: { id: CauseId; re: RegExp; detail?: (m: RegExpMatchArray) => string }[] = [
  { id: 'CRITICAL_CONFIG_MISMATCH', re: /critical configuration mismatched: ([\w-]+)/, detail: (m) => m[1] },
  { id: 'CRITICAL_CONFIG_MISMATCH', re: /critical configuration value mismatch|unable to join cluster due to critical configuration value mismatch/ },
  { id: 'TOKEN_CA_MISMATCH', re: /token CA hash does not match/ },
  { id: 'JOIN_FOUNDER_UNREACHABLE', re: /failed to get CA certs/ },
  { id: 'DUPLICATE_NODE_NAME', re: /duplicate node name found/ },
  { id: 'NODE_PASSWORD_REJECTED', re: /Node password rejected/ },
  { id: 'ETCD_PEER_UNREACHABLE', re: /cannot fetch cluster info from peer urls|dial tcp [\d.]+:2380: connect: connection refused/ },
  { id: 'ETCD_CLUSTER_UNHEALTHY', re: /etcdserver: unhealthy cluster/ },
  { id: 'ETCD_CLUSTER_UNHEALTHY', re: /etcdserver: too many learner members in cluster/ },
];

/** The first known failure in the journal lines (the most specific rule wins, not the first line). */
export function matchJoinFailure(journal: string): JournalMatch | undefined {
  const lines = journal.split('\n');
  for (const rule of RULES) {
    for (const line of lines) {
      const m = line.match(rule.re);
      if (m) {
        // A later, more specific line may name the flag ("mismatched: cluster-cidr"): prefer it.
        const detailed = rule.detail ? undefined : RULES.find((r) => r.id === rule.id && r.detail && journal.match(r.re));
        if (detailed) {
          const dm = journal.match(detailed.re)!;
          return { id: rule.id, line: dm[0], detail: detailed.detail!(dm) };
        }
        return { id: rule.id, line: line.trim(), detail: rule.detail?.(m) };
      }
    }
  }
  return undefined;
}
