// What a rolling change does on a host before its k3s restarts, as one action (listed command by command in
// the plan): the others hold quorum without it (every etcd member started and a voter, every server's API
// ready), the VIP handed to another server when this one holds it (kube-vip releases its lease when its pod
// goes: ReleaseOnCancel), then the node cordoned and drained through the eviction API. A refusal here comes
// before anything on the host changed.
import { CauseError } from '../../src/errors.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { poll } from '../../src/engine/poll.ts';
import { KUBE_VIP_DAEMONSET, KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../../src/addons/kube-vip.ts';
import { MEMBER_LIST_COMMAND, compareMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { kubectl } from '../../src/k3s/remote.ts';
import { lastLines } from '../../src/util/text.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { drainThrough, DRAIN_BUDGET_MS } from './rolling-evict.ts';
import type { RollingView } from './rolling-facts.ts';

const HANDOVER_BUDGET_MS = (LEASE_TIMING.duration + 20) * 1000;
export const PRE_RESTART_BUDGET_MS = 60_000 + HANDOVER_BUDGET_MS + DRAIN_BUDGET_MS;

const readyz = (address: string, port: number) => `k3s kubectl --server https://${address}:${port} get --raw /readyz --request-timeout=5s`;
const HOLDER = `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o jsonpath='{.spec.holderIdentity}' --request-timeout=5s`;
const kubeVipPodDelete = (node: string) =>
  `delete pod -n ${KUBE_VIP_NAMESPACE} -l app.kubernetes.io/name=${KUBE_VIP_DAEMONSET} --field-selector spec.nodeName=${node} --wait=false`;

export function preRestartAction(host: HostRef, ctx: ReadContext, view: RollingView): ActionChange {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const servers = serverRefs(ctx.inventory);
  const holder = view.holder === host.name;
  // Quorum is read through a server that stays up: any other member (an agent reads through the first).
  const via = servers.find((s) => s.name !== host.name && view.members.includes(s.name)) ?? host;
  return {
    kind: 'action',
    description: `before ${host.name}'s k3s restarts: the others hold quorum${holder ? ', the VIP handed over' : ''}, the node cordoned and drained (PodDisruptionBudgets honoured)`,
    on: via.name,
    runs: [
      `sudo ${MEMBER_LIST_COMMAND}   (every member started, none a learner, one voter per running server)`,
      ...servers.map((s) => `sudo ${readyz(s.address, port)}`),
      ...(holder
        ? [
            `sudo k3s kubectl ${kubeVipPodDelete(host.name)}   (kube-vip releases the lease as its pod stops)`,
            `every 1 s, at most ${HANDOVER_BUDGET_MS / 1000} s: sudo k3s kubectl ${HOLDER}; sudo ${readyz(ctx.inventory.derived.apiEndpoint.host, port)}   (until another server holds it and the VIP answers)`,
          ]
        : []),
      `PATCH /api/v1/nodes/${host.name} spec.unschedulable=true   (Kubernetes API through the SSH connection to ${via.name})`,
      `POST /api/v1/namespaces/<ns>/pods/<pod>/eviction for each pod on ${host.name} but DaemonSet and mirror pods, again every 5 s while a PodDisruptionBudget refuses (429), at most ${DRAIN_BUDGET_MS / 1000} s until they are gone`,
    ],
    budgetMs: PRE_RESTART_BUDGET_MS,
    run: async (actx) => {
      await quorumHolds(actx, host, via, view);
      if (holder) await handOver(actx, host, via);
      await drainThrough(actx, via, host);
    },
  };
}

/** Every etcd member started and a voter, one per running server, each server's API ready: else QUORUM_AT_RISK. */
async function quorumHolds(ctx: RunContext, host: HostRef, via: HostRef, view: RollingView): Promise<void> {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const servers = serverRefs(ctx.inventory);
  const list = await ctx.remote(via).exec(MEMBER_LIST_COMMAND, { sudo: true, timeoutMs: 15_000, signal: ctx.signal });
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
        const r = await ctx
          .remote(via)
          .exec(readyz(s.address, port), { sudo: true, timeoutMs: 15_000, signal: ctx.signal })
          .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
        return { s, ok: r.code === 0 && r.stdout.trim() === 'ok', said: lastLines(`${r.stdout}${r.stderr}`, 1).trim() };
      }),
  );
  for (const a of answers.filter((a) => !a.ok)) problems.push(`${a.s.name}'s API (/readyz) is not ready: ${a.said || 'no answer'}`);
  if (!problems.length) return;
  const total = members?.length ?? view.members.length;
  const healthy = answers.filter((a) => a.ok && a.s.name !== host.name).length;
  throw new CauseError('QUORUM_AT_RISK', {
    host: host.name,
    message: `${host.name} is not restarted: without it ${healthy} of ${total} etcd members would be healthy and every member must be healthy before a rolling restart`,
    evidence: {
      command: `${MEMBER_LIST_COMMAND}; k3s kubectl --server https://<each server>:${port} get --raw /readyz (on ${via.name})`,
      seen: problems.join('; '),
    },
  });
}

/** The VIP moves off `host` before its k3s restarts: its kube-vip pod is deleted, another server takes the lease. */
async function handOver(ctx: RunContext, host: HostRef, via: HostRef): Promise<void> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  const del = await kubectl(ctx, via, kubeVipPodDelete(host.name), 30_000);
  let seen = `kubectl delete pod: ${lastLines(`${del.stdout}${del.stderr}`, 2).trim()}`;
  const moved = await poll(ctx, ctx.signal, {
    everyMs: 1_000,
    withinMs: HANDOVER_BUDGET_MS,
    look: async () => {
      const [lease, answer] = await Promise.all([
        kubectl(ctx, via, HOLDER).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message })),
        ctx
          .remote(via)
          .exec(readyz(vip, port), { sudo: true, timeoutMs: 10_000, signal: ctx.signal })
          .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message })),
      ]);
      const now = lease.code === 0 ? lease.stdout.trim() : '';
      if (now && now !== host.name && answer.code === 0 && answer.stdout.trim() === 'ok') return now;
      seen = `lease holder ${now || '(none)'}; the VIP ${vip} /readyz: ${lastLines(`${answer.stdout}${answer.stderr}`, 1).trim() || 'no answer'}`;
      return undefined;
    },
  });
  if (moved) {
    ctx.emit({
      type: 'check',
      phase: 'rolling-servers',
      check: 'vip-handover',
      title: 'the VIP handed over before the restart',
      host: host.name,
      ok: true,
      detail: `now held by ${moved}`,
    });
    return;
  }
  ctx.signal.throwIfAborted();
  throw new CauseError('VIP_NOT_ANSWERING', {
    host: host.name,
    message: `the VIP did not move off ${host.name} within ${HANDOVER_BUDGET_MS / 1000} s of its kube-vip pod's deletion; ${host.name} is not restarted`,
    evidence: { command: `k3s kubectl ${HOLDER}; ${readyz(vip, port)} (on ${via.name})`, seen },
  });
}
