// Before a replace changes anything (check mode too): the OTHER servers must hold etcd quorum. Deleting
// the old member and adding the new one are both etcd membership changes, which need a majority of the
// current members answering; the server being replaced is counted as a member but never as an answer.
// Without that majority the path is a restore (runbooks/dr-restore.md), not a replace.
import { CauseError, causesOf } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { runFact, type FactValue } from '../../src/engine/facts.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { MEMBER_LIST_READ, compareMembers, readMembers, type Member } from '../../src/k3s/etcd-members.ts';
import { NOT_FOUND } from '../../src/k3s/remote.ts';
import { apiRead } from '../../src/kube/api-read.ts';
import { nodeRead, READYZ } from './node-api.ts';

/** What one surviving server showed. */
export interface SurvivorSeen {
  name: string;
  /** Why it gave no answer (not reachable, its API not ready), or undefined when its API is ready. */
  down?: string;
  /** etcd's member list from this server (k3s's /db/info), when it answered. */
  members?: Member[];
  /** Whether the replaced server's Node is registered, as this server's API says. */
  nodePresent?: boolean;
  /** No connection at all (down or not answering SSH). */
  unreachable?: boolean;
}

export interface ReplaceFacts {
  /** The surviving server the replace talks to (delete, wait). */
  via: string;
  nodePresent: boolean;
  /** Members of the replaced server while its Node is already gone: a join would be a duplicate. */
  orphanMembers: Member[];
  /** Size of etcd's member list (the servers' count when no survivor's /db/info answered). */
  memberCount: number;
}

/** What the quorum check found, for the replace steps: absent on a run that replaces nothing. */
export const replaceFacts = runFact<ReplaceFacts>('replace');

/** Pure: the verdict on the survivors, and the facts the replace steps plan from. */
export function quorumVerdict(
  replaced: { name: string; address: string },
  serverCount: number,
  seen: SurvivorSeen[],
): { stop?: CauseError; facts?: ReplaceFacts } {
  const ready = seen.filter((s) => !s.down);
  const members = ready.find((s) => s.members)?.members;
  const memberCount = members?.length ?? serverCount;
  const needed = Math.floor(memberCount / 2) + 1;
  if (ready.length < needed) {
    const state = seen.map((s) => `${s.name}: ${s.down ?? 'API ready'}`).join('; ');
    return {
      stop: new CauseError('QUORUM_AT_RISK', {
        host: replaced.name,
        message: `Only ${ready.length} of the other servers answer; ${needed} of ${memberCount} etcd members are needed to replace ${replaced.name}`,
        evidence: { command: "GET /readyz at each other server's API (or k3s kubectl get --raw='/readyz' there)", seen: state },
      }),
    };
  }
  const via = ready[0];
  const mine = members ? membersOf(members, replaced) : [];
  const nodePresent = via.nodePresent === true;
  return { facts: { via: via.name, nodePresent, orphanMembers: nodePresent ? [] : mine, memberCount } };
}

/** How long the other servers may take to answer: right after a server died, etcd may still be electing a leader. */
export const QUORUM_SETTLE_MS = 45_000;
const QUORUM_POLL_MS = 3_000;

/**
 * Reads every other server (read-only) and stops with QUORUM_AT_RISK, or returns the facts. A verdict
 * short of quorum is read again within QUORUM_SETTLE_MS while enough servers are reachable to make it;
 * servers that do not even answer SSH will not come back by waiting, so then it stops at once.
 */
export async function checkQuorum(ctx: RunContext, replaced: HostRef): Promise<FactValue<'run'>[]> {
  const others = ctx.topology.servers.filter((s) => s.name !== replaced.name);
  const until = ctx.clock.now() + QUORUM_SETTLE_MS;
  for (;;) {
    const seen = await Promise.all(others.map((s) => readSurvivor(ctx, s, replaced.name)));
    const verdict = quorumVerdict(replaced, others.length + 1, seen);
    if (verdict.facts) return [replaceFacts(verdict.facts)];
    const reachable = seen.filter((s) => !s.unreachable).length;
    if (reachable < Math.floor((others.length + 1) / 2) + 1 || ctx.clock.now() + QUORUM_POLL_MS > until) throw verdict.stop;
    await ctx.clock.sleep(QUORUM_POLL_MS, ctx.signal);
  }
}

async function readSurvivor(ctx: RunContext, s: HostRef, replaced: string): Promise<SurvivorSeen> {
  try {
    const ready = await apiRead(ctx, s, READYZ, 20_000);
    if (ready.code !== 0 || ready.stdout.trim() !== 'ok')
      return { name: s.name, down: `API not ready (${firstLine(ready.stderr || ready.stdout) || `exit ${ready.code}`})` };
    const [node, list] = await Promise.all([apiRead(ctx, s, nodeRead(replaced), 20_000), apiRead(ctx, s, MEMBER_LIST_READ, 20_000)]);
    // etcd's own member list (k3s's /db/info); none this time: the servers' count stands in.
    const members = readMembers(list);
    // Only a NotFound says the Node is gone: any other failure leaves it to the delete (which ignores not-found).
    return { name: s.name, members, nodePresent: !NOT_FOUND.test(node.stderr) || node.code === 0 };
  } catch (err) {
    const cause = causesOf(err)[0];
    return { name: s.name, unreachable: true, down: cause ? `not reachable (${cause.causeId})` : `no answer (${(err as Error).message})` };
  }
}

/** The members that belong to a server (by its node name or its peer address). */
export function membersOf(members: Member[], server: { name: string; address: string }): Member[] {
  return members.filter((m) => compareMembers([m], [server]).missing[0]?.why !== 'not in the member list');
}

const firstLine = (s: string) => s.trim().split('\n')[0] ?? '';

/** The stop of a Node already gone while etcd still lists a member of it (read through `via`): a rejoin would be a duplicate. */
export function orphanMemberStop(host: HostRef, via: string, members: Member[]): CauseError {
  return new CauseError('ETCD_MEMBER_NOT_REMOVED', {
    host: host.name,
    message: `The Node ${host.name} is gone but etcd still lists a member of it`,
    evidence: {
      command: `k3s kubectl get --raw /db/info (on ${via})`,
      seen: members.map((m) => `${m.id} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}`).join('; '),
    },
  });
}
