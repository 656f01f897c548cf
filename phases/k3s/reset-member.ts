// Before a server that is not the last one standing is wiped, its etcd member leaves the cluster: its k3s is
// stopped first, then its Node is deleted NORMALLY through a server that stays (k3s's etcd finalizer then
// removes the member; a forced delete would skip that), and the member's going is waited for, bounded
// (phases/k3s/replace-steps.ts waitMemberGone, ETCD_MEMBER_NOT_REMOVED). Stopped first, because a k3s still
// running when its member is removed finds etcd's tombstone and joins again as a new member (k3s-io/k3s
// v1.33.5+k3s1 pkg/etcd/etcd.go, as phases/k3s/remove-steps.ts says), and a running kubelet registers its
// Node again: the same order as --remove.
//
// Whether quorum allows it is read when the step runs (the servers reset before it changed the member
// list): the servers that stay and answer (/readyz) must be a majority of the members, the leaving one
// counted as down (it is stopped first). So the second-to-last server keeps its member: two members
// cannot let one go once it is stopped. When they are not a majority, a whole-cluster reset skips the
// removal and says so (a warning: the cluster is being taken down anyway); a reset of one node (--node)
// stops with QUORUM_AT_RISK instead, before anything changed on the host (modes/reset.ts checked the same
// before the run).
// An agent's Node is deleted only when the cluster stays (--node): in a whole-cluster reset it goes with it.
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { ActionContext } from '../../src/engine/changes.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { MEMBER_LIST_READ, readMembers } from '../../src/k3s/etcd-members.ts';
import { apiDelete, apiRead, apiShown } from '../../src/kube/api-read.ts';
import { DATA_DIR, roleOf } from '../../src/k3s/paths.ts';
import { unitRuns } from '../../src/k3s/unit-state.ts';
import { waitMemberGone } from './replace-steps.ts';
import { nodeDelete, nodeRead, READYZ } from './node-api.ts';

/** What the removal's run may take: the reads (20 s each, in parallel), kubectl's delete (100 s), the wait (120 s). */
const MEMBER_BUDGET_MS = 20_000 + 100_000 + 120_000 + 20_000;
const DELETE_TIMEOUT_MS = 100_000;

/** Pure: may the members let one go? `answering` counts the servers that stay whose API is ready (the leaving one is stopped). */
export function removalAllowed(memberCount: number, answering: number): { ok: boolean; needed: number } {
  const needed = Math.floor(memberCount / 2) + 1;
  return { ok: answering >= needed, needed };
}

/** The servers that stay while `host` is reset: in a whole-cluster reset those reset after it, else every other. */
export function staying(host: HostRef, order: HostRef[], node: string | undefined, servers: HostRef[]): HostRef[] {
  if (node !== undefined) return servers.filter((s) => s.name !== host.name);
  const at = order.findIndex((h) => h.name === host.name);
  return order.slice(at + 1).filter((h) => h.role === 'server');
}

export function memberStep(order: HostRef[], node: string | undefined): Step {
  return {
    id: 'reset-member',
    title:
      node === undefined
        ? 'etcd member removed while quorum allows (every server but the last)'
        : "Node deleted from the cluster (a server's etcd member with it)",
    // Only a host that still has k3s is still a member as far as it knows: a reset host plans nothing here.
    probe: (host): Record<string, ProbeCommand> => ({
      k3s: { command: `systemctl is-active ${roleOf(host).unit}; [ -e ${DATA_DIR} ] && echo data; true` },
    }),
    plan: ({ host, probe, ctx }) => {
      const stays = staying(host, order, node, ctx.topology.servers);
      const seen = (probe.k3s?.stdout ?? '').split('\n').map((l) => l.trim());
      const hasK3s = seen.some((l) => unitRuns(l) || l === 'data');
      // An agent's Node only matters when the cluster stays; a server with none staying is the last one standing.
      if (!hasK3s || !stays.length || (host.role === 'agent' && node === undefined)) return { changes: [] };
      const server = host.role === 'server';
      return {
        changes: [
          {
            kind: 'action',
            description: server
              ? `stop k3s on ${host.name}, delete its Node through a server that stays (${stays.map((s) => s.name).join(', ')}; never forced: k3s's finalizer removes its etcd member), wait up to 120 s until the member is gone (${node === undefined ? 'skipped with a warning' : 'refused, QUORUM_AT_RISK,'} when the servers that answer are no majority of the members)`
              : `stop k3s-agent on ${host.name}, delete its Node through a server (${stays.map((s) => s.name).join(', ')}; never forced) and wait until it is gone`,
            runs: [
              `${apiShown('GET', READYZ, stays.map((s) => s.name).join(', '))}: who answers`,
              `${apiShown('GET', MEMBER_LIST_READ, '<the first that answers>')}: the members`,
              `sudo systemctl stop ${roleOf(host).unit} (on ${host.name}: a running k3s would join again, its kubelet register its Node again)`,
              apiShown('DELETE', nodeDelete(host.name), '<the first that answers>'),
              `every 2 s, at most 120 s, until both say it is gone: ${apiShown('GET', nodeRead(host.name), '<the first that answers>')}; GET /db/info the same way`,
            ],
            budgetMs: MEMBER_BUDGET_MS,
            run: (actx) => removeMember(actx, host, stays, node !== undefined),
          },
        ],
      };
    },
  };
}

async function ready(ctx: RunContext, s: HostRef): Promise<boolean> {
  const r = await apiRead(ctx, s, READYZ, 20_000).catch(() => undefined);
  return r?.code === 0 && r.stdout.trim() === 'ok';
}

async function removeMember(ctx: ActionContext, host: HostRef, stays: HostRef[], refuse: boolean): Promise<void> {
  const answers = await Promise.all(stays.map(async (s) => ({ s, ok: await ready(ctx, s) })));
  const via = answers.find((a) => a.ok)?.s;
  const list = via ? await apiRead(ctx, via, MEMBER_LIST_READ, 20_000).catch(() => undefined) : undefined;
  const members = list && readMembers(list);
  const memberCount = members?.length ?? stays.length + 1;
  const answering = answers.filter((a) => a.ok).length;
  const verdict = host.role === 'server' ? removalAllowed(memberCount, answering) : { ok: via !== undefined, needed: 1 };
  if (!via || !verdict.ok) {
    const seen = answers.map((a) => `${a.s.name}: ${a.ok ? 'API ready' : 'no ready API'}`).join('; ');
    const why =
      host.role === 'server'
        ? `${answering} of ${memberCount} etcd members answer without ${host.name}, ${verdict.needed} are needed to remove its member`
        : `no server answers to delete ${host.name}'s Node through`;
    if (refuse)
      throw new CauseError('QUORUM_AT_RISK', {
        host: host.name,
        message: `${why}: nothing on ${host.name} changed`,
        evidence: { command: "GET /readyz at each server's API (or k3s kubectl get --raw='/readyz' there)", seen },
      });
    ctx.emit({
      type: 'warning',
      host: host.name,
      message: `member removal skipped: ${why} (${seen}); ${host.name} is wiped with its member left in the cluster, which is being taken down`,
    });
    return;
  }
  const stop = await ctx
    .remote(host)
    .exec(`systemctl stop ${roleOf(host).unit}`, { sudo: true, timeoutMs: 120_000, signal: ctx.signal })
    .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  if (stop.code !== 0)
    throw new CauseError('APPLY_FAILED', {
      host: host.name,
      evidence: { command: `systemctl stop ${roleOf(host).unit}`, exitCode: stop.code, excerpt: `${stop.stdout}${stop.stderr}`.trim().slice(-500) },
    });
  const del = await apiDelete(ctx, via, nodeDelete(host.name), DELETE_TIMEOUT_MS).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  await waitMemberGone(ctx, via, host, `${del.stdout}${del.stderr}`.trim());
}
