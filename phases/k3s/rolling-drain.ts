// What a rolling change does on a host before its k3s restarts, as two actions (listed command by command in
// the plan): first, reading only, that the others hold quorum without it (every etcd member started and a
// voter, every server's API ready) — a refusal there comes before anything changed, the backup too; then,
// after the backup, the VIP handed to another server when this one holds it (kube-vip releases its lease when
// its pod goes: ReleaseOnCancel) and the node cordoned and drained through the eviction API.
import { CauseError } from '../../src/errors.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { poll } from '../../src/engine/poll.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../../src/addons/kube-vip.ts';
import { MEMBER_LIST_COMMAND, compareMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { kubectl, readyzVia, VIP_HOLDER_ARGS } from '../../src/k3s/remote.ts';
import { lastLines } from '../../src/util/text.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';
import { shq } from '../../src/util/shell.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { drainThrough, DRAIN_BUDGET_MS } from './rolling-evict.ts';
import { otherMember, type RollingView } from './rolling-facts.ts';

const HANDOVER_BUDGET_MS = (LEASE_TIMING.duration + 20) * 1000;

const LEASE_JSON = `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o json --request-timeout=5s`;
/** Whether the VIP is on one of the host's NICs (the count of its addresses that are the VIP). */
const vipOnHost = (vip: string) => `ip -4 -o addr show | grep -c ' ${vip}/'`;

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
      `sudo ${MEMBER_LIST_COMMAND}   (every member started, none a learner, one voter per running server)`,
      ...serverRefs(ctx.inventory)
        .filter((s) => view.members.includes(s.name))
        .map((s) => `sudo ${readyzVia(s.address, port)}`),
    ],
    budgetMs: QUORUM_CHECK_BUDGET_MS,
    run: (actx) => quorumHolds(actx, host, via, view),
  };
}

/** The node emptied: the VIP handed over when it holds it, then cordoned and drained (PodDisruptionBudgets honoured). */
export function drainAction(host: HostRef, ctx: ReadContext, view: RollingView): ActionChange {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const holder = view.holder === host.name;
  const via = otherMember(host, ctx, view);
  return {
    kind: 'action',
    description: `before ${host.name}'s k3s restarts: ${holder ? 'the VIP handed over, ' : ''}the node cordoned and drained (PodDisruptionBudgets honoured)`,
    on: via.name,
    runs: [
      ...(holder
        ? [
            `sudo k3s kubectl ${LEASE_JSON}`,
            `sudo k3s kubectl patch lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} --type merge -p '{"metadata":{"resourceVersion":"<as read>"},"spec":{"holderIdentity":"${handoverTarget(host, ctx, view)?.name ?? '<another server>'}","renewTime":"<now>","leaseTransitions":<+1>}}'   (its kube-vip takes the lease at its next retry; ${host.name}'s steps down at its next renewal)`,
            `every 1 s, at most ${HANDOVER_BUDGET_MS / 1000} s: sudo k3s kubectl ${VIP_HOLDER_ARGS}; on ${host.name}: ${vipOnHost(ctx.inventory.derived.apiEndpoint.host)}; sudo ${readyzVia(ctx.inventory.derived.apiEndpoint.host, port)}   (until the other server holds it, ${host.name} no longer carries the VIP, and the VIP answers)`,
          ]
        : []),
      `PATCH /api/v1/nodes/${host.name} spec.unschedulable=true   (Kubernetes API through the SSH connection to ${via.name})`,
      `POST /api/v1/namespaces/<ns>/pods/<pod>/eviction for each pod on ${host.name} but DaemonSet and mirror pods, again every 5 s while a PodDisruptionBudget refuses (429), at most ${DRAIN_BUDGET_MS / 1000} s until they are gone`,
    ],
    budgetMs: HANDOVER_BUDGET_MS + DRAIN_BUDGET_MS + 30_000,
    run: async (actx) => {
      if (holder) await handOver(actx, host, via, handoverTarget(host, actx, view));
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
          .exec(readyzVia(s.address, port), { sudo: true, timeoutMs: 15_000, signal: ctx.signal })
          .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
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
      command: `${MEMBER_LIST_COMMAND}; k3s kubectl --server https://<each server>:${port} get --raw /readyz (on ${via.name})`,
      seen: problems.join('; '),
    },
  });
}

/** The server the VIP is handed to: another running member (the first in inventory order). */
function handoverTarget(host: HostRef, ctx: ReadContext, view: RollingView): HostRef | undefined {
  const other = otherMember(host, ctx, view);
  return other.name === host.name ? undefined : other;
}

/** metav1.MicroTime as the API server writes it. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

/** How often the lease is read and written again when kube-vip renewed it in between (a 409 Conflict). */
const LEASE_WRITE_ATTEMPTS = 5;
// The apiserver's words for a write whose resourceVersion is no longer current, in its 409 Conflict
// (kubernetes/apiserver v0.32.3 pkg/registry/generic/registry/store.go OptimisticLockErrorMsg).
/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const CONFLICT = /the object has been modified; please apply your changes to the latest version and try again/;
/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { CONFLICT };

/**
 * The lease written to `target`, a compare-and-swap on the resourceVersion just read. kube-vip's holder renews
 * it every retry period (a second), so a renewal between the read and the write is common: that write is
 * refused as a conflict and is read and tried again, as client-go's RetryOnConflict does. Returns what was
 * done, for the evidence, and whether the lease now names `target`.
 */
export async function writeLease(ctx: RunContext, via: HostRef, target: HostRef): Promise<{ ok: boolean; said: string }> {
  let said = '';
  for (let attempt = 1; attempt <= LEASE_WRITE_ATTEMPTS; attempt++) {
    const read = await kubectl(ctx, via, LEASE_JSON, 15_000);
    if (read.code !== 0) return { ok: false, said: `the lease could not be read: ${lastLines(`${read.stdout}${read.stderr}`, 1).trim()}` };
    const lease = JSON.parse(read.stdout);
    const patch = {
      metadata: { resourceVersion: lease.metadata?.resourceVersion },
      spec: {
        holderIdentity: target.name,
        renewTime: microTime(ctx.clock.now()),
        acquireTime: microTime(ctx.clock.now()),
        leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
      },
    };
    const wrote = await kubectl(ctx, via, `patch lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} --type merge -p ${shq(JSON.stringify(patch))}`, 15_000);
    said = lastLines(`${wrote.stdout}${wrote.stderr}`, 1).trim();
    if (wrote.code === 0)
      return { ok: true, said: `lease written to ${target.name}${attempt > 1 ? ` at attempt ${attempt} (kube-vip renewed it between read and write)` : ''}` };
    if (!CONFLICT.test(said)) return { ok: false, said: `the lease could not be written to ${target.name}: ${said}` };
  }
  return { ok: false, said: `the lease could not be written to ${target.name}: ${LEASE_WRITE_ATTEMPTS} writes refused as conflicts (${said})` };
}

/**
 * The VIP moves off `host` before its k3s restarts. Deleting its kube-vip pod does not do it: the DaemonSet puts
 * a new one on the same node at once, which takes the released lease again. So the lease is written to the other
 * server (a compare-and-swap on its resourceVersion): client-go's election lets a candidate renew a lease whose
 * holder is itself (kubernetes/client-go v0.32.3 tools/leaderelection/leaderelection.go tryAcquireOrRenew: the
 * check that refuses a valid lease is skipped when IsLeader() sees its own identity), so that kube-vip leads at
 * its next retry; the old holder's next renewal sees another holder and it steps down, deleting the VIP
 * (kube-vip v0.9.2 pkg/cluster/clusterLeaderElection.go OnStoppedLeading). The wait ends once the other server
 * holds the lease, the VIP is off `host`'s NICs and answers.
 */
async function handOver(ctx: RunContext, host: HostRef, via: HostRef, target: HostRef | undefined): Promise<void> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  const write = target ? await writeLease(ctx, via, target) : { ok: false, said: 'no other running server to hand the VIP to' };
  const wrote = write.said;
  let seen = wrote;
  // A lease that could not be written never moves: no wait for it.
  const moved =
    target &&
    write.ok &&
    (await poll(ctx, ctx.signal, {
      everyMs: 1_000,
      withinMs: HANDOVER_BUDGET_MS,
      look: async () => {
        const failed = (e: Error) => ({ code: null, stdout: '', stderr: e.message });
        const [lease, onHost, answer] = await Promise.all([
          kubectl(ctx, via, VIP_HOLDER_ARGS).catch(failed),
          ctx.remote(host).exec(vipOnHost(vip), { timeoutMs: 10_000, signal: ctx.signal }).catch(failed),
          ctx.remote(via).exec(readyzVia(vip, port), { sudo: true, timeoutMs: 10_000, signal: ctx.signal }).catch(failed),
        ]);
        const now = lease.code === 0 ? lease.stdout.trim() : '';
        const carried = onHost.stdout.trim() !== '0';
        if (now && now !== host.name && !carried && answer.code === 0 && answer.stdout.trim() === 'ok') return now;
        seen = `${wrote}; then lease holder ${now || '(none)'}; the VIP ${carried ? 'still' : 'no longer'} on ${host.name}'s NIC; the VIP ${vip} /readyz: ${lastLines(`${answer.stdout}${answer.stderr}`, 1).trim() || 'no answer'}`;
        return undefined;
      },
    }));
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
    message: write.ok
      ? `the VIP did not move off ${host.name} within ${HANDOVER_BUDGET_MS / 1000} s of the lease's hand-over to ${target?.name}; ${host.name} is not restarted`
      : `the VIP could not be handed over from ${host.name} (${wrote}); ${host.name} is not restarted`,
    evidence: { command: `k3s kubectl ${VIP_HOLDER_ARGS}; ${readyzVia(vip, port)} (on ${via.name})`, seen },
  });
}
