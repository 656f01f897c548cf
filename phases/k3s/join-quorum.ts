// Has the cluster a joiner asks to join lost etcd quorum? Asked only when the joiner's journal shows etcd
// refusing it for health (`etcdserver: unhealthy cluster`) or the server it joins unable to read etcd's
// member list (k3s's /db/info reads it linearizably, which needs quorum). Those refusals are transient while
// a freshly promoted member is not yet counted healthy, so alone they are named only after a minute; but a
// majority of the members down will not clear by waiting, and the servers to bring back are not the joiner.
import { causesOf } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { DB_DIR, SERVER_ROLE } from '../../src/k3s/paths.ts';

/** What one other server showed: whether it holds an etcd member's data, and why it is down, if it is. */
export interface ServerSeen {
  name: string;
  /** It holds etcd data (`db/etcd/member/wal`, k3s's IsInitialized): a member of the cluster. */
  member: boolean;
  /** Why its member cannot answer: its k3s stopped or failed, or the host does not answer SSH. */
  down?: string;
}

export interface QuorumLost {
  members: string[];
  down: ServerSeen[];
  /** Members that must answer for quorum: a majority. */
  needed: number;
}

/**
 * Pure: quorum is lost when fewer than a majority of the members (the servers holding etcd data, the joiner
 * not counted: it is at most a learner, which has no vote) answer. A k3s that is `activating` (starting, or
 * waiting to be restarted) counts as up: only a stopped or failed unit, or a host without SSH, is down.
 */
export function quorumLost(seen: ServerSeen[]): QuorumLost | undefined {
  const members = seen.filter((s) => s.member);
  const down = members.filter((s) => s.down);
  const needed = Math.floor(members.length / 2) + 1;
  if (members.length === 0 || members.length - down.length >= needed) return undefined;
  return { members: members.map((m) => m.name), down, needed };
}

/** The probe on each other server: its k3s unit's state, and whether it holds etcd data. */
export const MEMBER_PROBE = `systemctl is-active ${SERVER_ROLE.unit}; test -d ${DB_DIR}/etcd/member/wal && echo member || echo none`;

/** Reads every server but the joiner (read-only, in parallel). */
export async function readServers(ctx: RunContext, joiner: HostRef): Promise<ServerSeen[]> {
  const others = ctx.topology.servers.filter((s) => s.name !== joiner.name);
  return Promise.all(
    others.map(async (s): Promise<ServerSeen> => {
      try {
        const res = await ctx.remote(s).exec(MEMBER_PROBE, { readOnly: true, sudo: true, timeoutMs: 10_000, signal: ctx.signal });
        const [state = '', data = ''] = res.stdout
          .trim()
          .split('\n')
          .map((l) => l.trim());
        const down = state === 'inactive' || state === 'failed' ? `${SERVER_ROLE.unit} is ${state}` : undefined;
        return { name: s.name, member: data === 'member', down };
      } catch (err) {
        // No answer at all: whether it holds a member cannot be read; a server of the inventory that the run
        // reached before is taken for one.
        const cause = causesOf(err)[0];
        return { name: s.name, member: true, down: cause ? `not reachable (${cause.causeId})` : `no answer (${(err as Error).message})` };
      }
    }),
  );
}
