// What a rolling change does on a host before its k3s restarts, as two actions (listed command by command in
// the plan): first, reading only, that the others hold quorum without it (every etcd member started and a
// voter, every server's API ready) — a refusal there comes before anything changed, the backup too; then,
// after the backup, the VIP handed to another server when this one holds it (kube-vip releases its lease when
// its pod goes: ReleaseOnCancel) and the node cordoned and drained through the eviction API.
import { CauseError } from '../../src/errors.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { HANDOVER_BUDGET_MS, handOver, handoverRuns } from '../../src/k3s/vip-handover.ts';
import { MEMBER_LIST_READ, compareMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { apiRead, apiShown, readyzFrom } from '../../src/kube/api-read.ts';
import { readyzVia } from '../../src/k3s/remote.ts';
import { lastLines } from '../../src/util/text.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { drainBudgetMs, drainRuns, drainThrough } from './rolling-evict.ts';
import { otherMember, type RollingView } from './rolling-facts.ts';

/** How long the quorum check may take: the member list and every server's /readyz, each bounded. */
export const QUORUM_CHECK_BUDGET_MS = 30_000;

/** Read-only, first: every etcd member started and a voter, every server's API ready, or QUORUM_AT_RISK. */
export function quorumAction(host: HostRef, ctx: ReadContext, view: RollingView): ActionChange {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const via = otherMember(host, ctx, view);
  return {
    kind: 'action',
    description: `before ${host.name}'s k3s restarts: the others hold quorum (every etcd member started and a voter, every server's API ready; reads only)`,
    on: via.name,
    runs: [
      `${apiShown('GET', MEMBER_LIST_READ, via.name)}: every member started, none a learner, one voter per running server`,
      ...serverRefs(ctx.inventory)
        .filter((s) => view.members.includes(s.name))
        .map(
          (s) =>
            `GET https://${s.address}:${port}/readyz   (from ${via.name}, through its SSH connection; without the kubeconfig: sudo ${readyzVia(s.address, port)} there)`,
        ),
    ],
    budgetMs: QUORUM_CHECK_BUDGET_MS,
    run: (actx) => quorumHolds(actx, host, via, view),
  };
}

/** The node emptied: the VIP handed over when it holds it, then cordoned and drained (PodDisruptionBudgets honoured). */
export function drainAction(host: HostRef, ctx: ReadContext, view: RollingView): ActionChange {
  const holder = view.holder === host.name;
  const via = otherMember(host, ctx, view);
  return {
    kind: 'action',
    description: `before ${host.name}'s k3s restarts: ${holder ? 'the VIP handed over, ' : ''}the node cordoned and drained (PodDisruptionBudgets honoured)`,
    on: via.name,
    runs: [...(holder ? handoverRuns(host, handoverTarget(host, ctx, view), ctx.inventory.derived.apiEndpoint) : []), ...drainRuns(host, via, ctx)],
    budgetMs: HANDOVER_BUDGET_MS + drainBudgetMs(ctx) + 30_000,
    run: async (actx) => {
      if (holder) await handOver(actx, host, via, handoverTarget(host, actx, view), 'rolling-servers');
      await drainThrough(actx, via, host, host.role === 'server' ? 'rolling-servers' : 'rolling-agents');
    },
  };
}

/** Every etcd member started and a voter, one per running server, each server's API ready: else QUORUM_AT_RISK. */
async function quorumHolds(ctx: RunContext, host: HostRef, via: HostRef, view: RollingView): Promise<void> {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const servers = serverRefs(ctx.inventory);
  const list = await apiRead(ctx, via, MEMBER_LIST_READ, 15_000);
  const members = readMembers(list);
  const problems: string[] = [];
  if (!members) problems.push(`the member list on ${via.name} did not answer: ${lastLines(`${list.stdout}${list.stderr}`, 2).trim()}`);
  else {
    const running = servers.filter((s) => view.members.includes(s.name));
    const verdict = compareMembers(members, running);
    for (const m of members.filter((m) => m.isLearner)) problems.push(`member ${m.name || m.id} is a learner`);
    for (const m of members.filter((m) => !m.name)) problems.push(`member ${m.id} was added but never started`);
    for (const m of verdict.missing) problems.push(`${m.server}: ${m.why}`);
    for (const m of verdict.extra) problems.push(`member ${m.name || m.id} (${m.peerURLs.join(',')}) belongs to no running server`);
  }
  const answers = await Promise.all(
    servers
      .filter((s) => view.members.includes(s.name))
      .map(async (s) => {
        const r = await readyzFrom(ctx, via, s.address, port, 15_000).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
        return { s, ok: r.code === 0 && r.stdout.trim() === 'ok', said: lastLines(`${r.stdout}${r.stderr}`, 1).trim() };
      }),
  );
  const down = answers.filter((a) => !a.ok);
  for (const a of down) problems.push(`${a.s.name}'s API (/readyz) is not ready: ${a.said || 'no answer'}`);
  if (!problems.length) return;
  const total = members?.length ?? view.members.length;
  const healthy = answers.filter((a) => a.ok && a.s.name !== host.name).length;
  // The servers to bring back are named (else the one that is not restarted).
  throw new CauseError('QUORUM_AT_RISK', {
    host: down.length ? down.map((a) => a.s.name).join(', ') : host.name,
    message: `${host.name} is not restarted: without it ${healthy} of ${total} etcd members would be healthy, and every member must be healthy before a rolling restart`,
    evidence: {
      command: `GET /db/info; GET https://<each server>:${port}/readyz (from ${via.name}, through its SSH connection, or k3s kubectl there)`,
      seen: problems.join('; '),
    },
  });
}

/** The server the VIP is handed to: another running member (the first in inventory order). */
function handoverTarget(host: HostRef, ctx: ReadContext, view: RollingView): HostRef | undefined {
  const other = otherMember(host, ctx, view);
  return other.name === host.name ? undefined : other;
}
