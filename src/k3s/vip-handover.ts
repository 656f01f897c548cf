// Handing kube-vip's VIP from a server to another before that server goes (its k3s restarted by a rolling
// change, or the server removed): the lease written to the other server, then a bounded wait until that one
// holds it, the VIP is off the old holder's NICs and answers. Shared by the rolling change
// (phases/k3s/rolling-drain.ts) and a removal (phases/k3s/remove-steps.ts).
import { CauseError } from '../errors.ts';
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/phase.ts';
import { poll } from '../engine/poll.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../addons/kube-vip.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';
import { shq } from '../util/shell.ts';
import { lastLines } from '../util/text.ts';
import { apiPatch, apiRead, apiShown, readyzFrom, type ApiPatch } from '../kube/api-read.ts';
import { readyzVia, VIP_HOLDER_ARGS, VIP_HOLDER_READ } from './remote.ts';

/** The hand-over's wait: the lease's duration and a margin. */
export const HANDOVER_BUDGET_MS = (LEASE_TIMING.duration + 20) * 1000;

const LEASE_JSON = `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o json --request-timeout=5s`;
/** The lease whole (its resourceVersion for the write): through the run's SSH connection, LEASE_JSON without a kubeconfig. */
const LEASE_READ = { path: VIP_HOLDER_READ.path, kubectl: LEASE_JSON };
/** Whether the VIP is on one of the host's NICs (the count of its addresses that are the VIP). */
const vipOnHost = (vip: string) => `ip -4 -o addr show | grep -c ' ${vip}/'`;

/** The lease's compare-and-swap write (a JSON merge patch carrying the resourceVersion read), and the same write as kubectl arguments. */
const leaseWrite = (patch: unknown): ApiPatch => ({
  path: LEASE_READ.path,
  type: 'merge',
  patch,
  verb: 'patched',
  kubectl: `patch lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} --type merge -p ${shq(JSON.stringify(patch))}`,
});

/** Every command of a hand-over from `host` to `target`, as a plan lists them. */
export function handoverRuns(host: HostRef, target: HostRef | undefined, api: { host: string; port: number }): string[] {
  const patch = {
    metadata: { resourceVersion: '<as read>' },
    spec: { holderIdentity: target?.name ?? '<another server>', renewTime: '<now>', leaseTransitions: '<+1>' },
  };
  const via = 'the server that writes the lease';
  return [
    apiShown('GET', LEASE_READ, via),
    `${apiShown('PATCH', { ...leaseWrite(patch), patch }, via)}   (a JSON merge patch: its kube-vip takes the lease at its next retry; ${host.name}'s steps down at its next renewal)`,
    `every 1 s, at most ${HANDOVER_BUDGET_MS / 1000} s: GET ${VIP_HOLDER_READ.path} and GET https://${api.host}:${api.port}/readyz through the SSH connection to the server that writes the lease (without the state folder's kubeconfig: sudo k3s kubectl ${VIP_HOLDER_ARGS}; sudo ${readyzVia(api.host, api.port)} there); on ${host.name}: ${vipOnHost(api.host)}   (until the other server holds it, ${host.name} no longer carries the VIP, and the VIP answers)`,
  ];
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
    const read = await apiRead(ctx, via, LEASE_READ);
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
    const wrote = await apiPatch(ctx, via, leaseWrite(patch));
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
export async function handOver(ctx: RunContext, host: HostRef, via: HostRef, target: HostRef | undefined, phase: string): Promise<void> {
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
          // The holder and the VIP through the run's connection to `via`: no k3s process started every second.
          apiRead(ctx, via, VIP_HOLDER_READ).catch(failed),
          ctx.remote(host).exec(vipOnHost(vip), { readOnly: true, timeoutMs: 10_000, signal: ctx.signal }).catch(failed),
          readyzFrom(ctx, via, vip, port).catch(failed),
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
      phase,
      check: 'vip-handover',
      title: phase === 'rolling-servers' ? 'the VIP handed over before the restart' : 'the VIP handed over before the server goes',
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
      ? `the VIP did not move off ${host.name} within ${HANDOVER_BUDGET_MS / 1000} s of the lease's hand-over to ${target?.name}; ${host.name} is left as it is`
      : `the VIP could not be handed over from ${host.name} (${wrote}); ${host.name} is left as it is`,
    evidence: {
      command: `GET ${VIP_HOLDER_READ.path}; GET https://${vip}:${port}/readyz (from ${via.name}, through its SSH connection, or k3s kubectl there)`,
      seen,
    },
  });
}
