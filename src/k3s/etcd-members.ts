// Pure: etcd's member list (k3s's `/db/info`, whose members are etcd's MemberListResponse members as Go's
// encoding/json writes them: ID a JSON number, name/peerURLs/clientURLs/isLearner omitted when empty) against
// the inventory's servers.
import type { NodeSeen } from './nodes.ts';

/**
 * etcd's member list as k3s serves it on every server: the supervisor's `/db/info` (k3s-io/k3s
 * pkg/etcd/etcd.go handler/infoHandler: `{"members":[…]}`, etcd's MemberListResponse members), which
 * k3s answers without credentials to a client on 127.0.0.1 (auth.IsLocalOrHasRole, k3s-io/k3s#10001).
 * `k3s kubectl` dials https://127.0.0.1:6443 from k3s.yaml, so nothing beyond k3s is needed on the host.
 */
const MEMBER_LIST_ARGS = 'get --raw /db/info --request-timeout=5s';
export const MEMBER_LIST_COMMAND = `k3s kubectl ${MEMBER_LIST_ARGS}`;

/**
 * The same read for src/kube/api-read.ts apiRead: a GET of `/db/info` through the run's SSH connection to the
 * server (its 127.0.0.1:6443, so no k3s process is started on the host for it), MEMBER_LIST_COMMAND there without
 * a usable kubeconfig.
 */
export const MEMBER_LIST_READ = { path: '/db/info', kubectl: MEMBER_LIST_ARGS } as const;

export interface Member {
  /** Hex, as `etcdctl member remove` takes it. */
  id: string;
  /** Empty while a member was added but never started. */
  name: string;
  peerURLs: string[];
  isLearner: boolean;
}

export function parseMembers(json: string): Member[] {
  // IDs are uint64: quote them before JSON.parse rounds them.
  const doc = JSON.parse(json.replace(/"ID"\s*:\s*(\d+)/g, '"ID":"$1"'));
  return ((doc.members ?? []) as any[]).map((m) => ({
    id: m.ID !== undefined ? BigInt(m.ID).toString(16) : '?',
    name: m.name ?? '',
    peerURLs: m.peerURLs ?? [],
    isLearner: m.isLearner === true,
  }));
}

/** The members of one answer, or undefined when the command failed or printed no member list. */
export function readMembers(r: { code: number | null; stdout: string }): Member[] | undefined {
  if (r.code !== 0) return undefined;
  try {
    const doc = JSON.parse(r.stdout);
    if (!Array.isArray(doc?.members)) return undefined;
    return parseMembers(r.stdout);
  } catch {
    return undefined;
  }
}

export interface Server {
  name: string;
  address: string;
}

export interface MembershipVerdict {
  /** Server name → its member, when it is a started voter. */
  voters: Record<string, Member>;
  /** Servers that are not a started voting member, with why. */
  missing: { server: string; why: string }[];
  /** Members that belong to no server of the inventory. */
  extra: Member[];
}

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
};

/** k3s names a member `<node>-<8 hex>` and gives it the node's address as peer URL: either identifies it. */
function belongsTo(m: Member, s: Server): boolean {
  return m.peerURLs.some((u) => hostOf(u) === s.address) || memberOfNode(m, s.name);
}

/** Whether k3s named the member after Node `node` (`<node>-<8 hex>`). */
export function memberOfNode(m: Member, node: string): boolean {
  return m.name !== '' && new RegExp(`^${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[0-9a-f]{8}$`).test(m.name);
}

export function compareMembers(members: Member[], servers: Server[], nodes: NodeSeen[] = []): MembershipVerdict {
  const verdict: MembershipVerdict = { voters: {}, missing: [], extra: [] };
  for (const s of servers) {
    const mine = members.filter((m) => belongsTo(m, s));
    const m = mine[0];
    const node = nodes.find((n) => n.name === s.name);
    if (!m) verdict.missing.push({ server: s.name, why: 'not in the member list' });
    else if (m.isLearner) verdict.missing.push({ server: s.name, why: `member ${m.id} is still a learner` });
    else if (!m.name) verdict.missing.push({ server: s.name, why: `member ${m.id} was added but never started` });
    else if (node?.etcdVoter && node.etcdVoter.status !== 'True')
      verdict.missing.push({ server: s.name, why: `EtcdIsVoter=${node.etcdVoter.status}${node.etcdVoter.message ? `: ${node.etcdVoter.message}` : ''}` });
    else verdict.voters[s.name] = m;
  }
  verdict.extra = members.filter((m) => !servers.some((s) => belongsTo(m, s)));
  return verdict;
}

export function describeMember(m: Member): string {
  return `${m.name || '(unstarted)'} ${m.id} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`;
}

/** One line naming the extra and the missing members ("" when they match). */
export function mismatchLine(v: MembershipVerdict): string {
  const parts: string[] = [];
  if (v.missing.length) parts.push(`missing: ${v.missing.map((x) => `${x.server} (${x.why})`).join(', ')}`);
  if (v.extra.length) parts.push(`extra: ${v.extra.map(describeMember).join(', ')}`);
  return parts.join('; ');
}
