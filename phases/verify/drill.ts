// The failover drill (`bootstrap verify <env> --drill`): stop k3s on the VIP holder, measure until the VIP
// answers (/readyz) from another server with another holder, start k3s again and wait until the drilled
// server is an etcd voter again. It changes state (it stops a service), so it is a step after the checks
// (verify's afterGates) whose plan is one action listing what it runs: check mode shows it and never runs
// it. k3s is started again whatever happens (finally).
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { ActionContext } from '../../src/engine/changes.ts';
import type { HostRef, Step } from '../../src/engine/phase.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { poll } from '../../src/engine/poll.ts';
import { roleOf } from '../../src/k3s/paths.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../../src/addons/kube-vip.ts';
import { MEMBER_LIST_READ, compareMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { parseNodes } from '../../src/k3s/nodes.ts';
import { readyzVia, VIP_HOLDER_READ } from '../../src/k3s/remote.ts';
import { apiRead, apiShown, readyzFrom, type Answer } from '../../src/kube/api-read.ts';
import { lastLine, readCluster, VERIFY_PHASE } from './read.ts';

/** kube-vip's lease duration: a standby takes over once the holder's record stayed unchanged this long. */
const FAILOVER_LIMIT_MS = LEASE_TIMING.duration * 1_000 + 20_000;
const REJOIN_LIMIT_MS = 120_000;
/** A lease just given up is taken within a retry period; a lease duration and a margin at most. */
const HOLDER_LIMIT_MS = LEASE_TIMING.duration * 1_000 + 5_000;
const DRILL_BUDGET_MS = 60_000 + HOLDER_LIMIT_MS + FAILOVER_LIMIT_MS + 120_000 + REJOIN_LIMIT_MS;

const NODES = { path: '/api/v1/nodes', kubectl: 'get nodes -o json --request-timeout=5s' };
const failed = (e: Error): Answer => ({ code: null, stdout: '', stderr: e.message });

/**
 * From each other server: does the VIP answer /readyz (the engine's TLS to the VIP through that server's SSH
 * connection, a new connection each look), and who holds the lease now (its own API)? No process on the servers.
 */
async function vipMoved(ctx: RunContext, others: HostRef[], from: string): Promise<{ moved: boolean; seen: string; holder?: string }> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  const seen = await Promise.all(
    others.map(async (s) => {
      const [api, holder] = await Promise.all([readyzFrom(ctx, s, vip, port, 3_000).catch(failed), apiRead(ctx, s, VIP_HOLDER_READ, 3_000).catch(failed)]);
      return { s, r: { vip: api, holder } };
    }),
  );
  for (const { r } of seen) {
    const holder = r.holder.code === 0 ? r.holder.stdout.trim() : '';
    if (r.vip.code === 0 && r.vip.stdout.trim() === 'ok' && holder && holder !== from) return { moved: true, seen: '', holder };
  }
  return {
    moved: false,
    seen: seen
      .map(
        ({ s, r }) =>
          `from ${s.name}: VIP ${r.vip.code === 0 ? r.vip.stdout.trim() : lastLine(r.vip)}, lease holder ${r.holder.code === 0 ? r.holder.stdout.trim() || '(none)' : lastLine(r.holder)}`,
      )
      .join('; '),
  };
}

/** The drilled server is back: its own address answers /readyz and etcd (read on another server) counts it as a voter. */
async function backAsVoter(ctx: RunContext, drilled: HostRef, other: HostRef): Promise<{ ok: boolean; seen: string }> {
  const { port } = ctx.inventory.derived.apiEndpoint;
  const [api, members, nodes] = await Promise.all([
    readyzFrom(ctx, other, drilled.address, port, 5_000).catch(failed),
    apiRead(ctx, other, MEMBER_LIST_READ).catch(failed),
    apiRead(ctx, other, NODES).catch(failed),
  ]);
  if (!(api.code === 0 && api.stdout.trim() === 'ok')) return { ok: false, seen: `${drilled.address}:${port}/readyz from ${other.name}: ${lastLine(api)}` };
  if (nodes.code !== 0) return { ok: false, seen: `the nodes (GET /api/v1/nodes) through ${other.name}: ${lastLine(nodes)}` };
  const listed = readMembers(members);
  if (!listed) return { ok: false, seen: `the etcd member list (/db/info) through ${other.name}: ${lastLine(members)}` };
  const verdict = compareMembers(listed, [drilled], parseNodes(nodes.stdout));
  if (verdict.voters[drilled.name]) return { ok: true, seen: '' };
  return { ok: false, seen: `${drilled.name}: ${verdict.missing[0]?.why ?? 'not a voter'}` };
}

const TITLE = 'failover drill: k3s stopped on the VIP holder, the VIP moves, the server rejoins as a voter';

export const failoverDrill: Step = {
  id: 'failover-drill',
  title: TITLE,
  plan: ({ ctx }) => {
    const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
    return {
      changes: [
        {
          kind: 'action',
          description: TITLE,
          runs: [
            `GET /apis/coordination.k8s.io/v1/namespaces/${KUBE_VIP_NAMESPACE}/leases/${KUBE_VIP_LEASE}   (the Kubernetes API through a server that answers: who holds the VIP; read again every 1 s while the lease has no holder, at most ${HOLDER_LIMIT_MS / 1000} s)`,
            'sudo systemctl stop <the unit of k3s>   (on the VIP holder)',
            `every 0.5 s, at most ${FAILOVER_LIMIT_MS / 1000} s, from each other server: GET https://${vip}:${port}/readyz through its SSH connection (without the state folder's kubeconfig: sudo ${readyzVia(vip, port, 3)} there); ${apiShown('GET', VIP_HOLDER_READ, '<each other server>')}`,
            'sudo systemctl start <the unit of k3s>   (on the VIP holder, whatever happened)',
            `every 2 s, at most ${REJOIN_LIMIT_MS / 1000} s, from another server: GET https://<the holder>:${port}/readyz the same way; ${apiShown('GET', MEMBER_LIST_READ, '<another server>')}; ${apiShown('GET', NODES, '<another server>')}`,
          ],
          budgetMs: DRILL_BUDGET_MS,
          run: (actx) => drill(actx),
        },
      ],
    };
  },
};

async function drill(ctx: ActionContext): Promise<void> {
  const { host, signal } = ctx;
  const servers = serverRefs(ctx.inventory);
  // kube-vip gives the lease up when its pod stops (a rollout of its DaemonSet just before the drill): the holder
  // is empty until a server takes it at its next retry. Read again while it is empty or unreadable, a bounded
  // while; a holder that is no server is final.
  let seen = '';
  const drilled = await poll(ctx, signal, {
    everyMs: 1_000,
    withinMs: HOLDER_LIMIT_MS,
    look: async () => {
      const lease = await readCluster(ctx, (api) => api.lease(KUBE_VIP_NAMESPACE, KUBE_VIP_LEASE));
      const holderName = lease.ok ? (lease.value.spec?.holderIdentity ?? '') : '';
      seen = !lease.ok ? lease.seen : holderName ? `holder "${holderName}" is no server` : `no holder for ${HOLDER_LIMIT_MS / 1000} s`;
      return servers.find((s) => s.name === holderName) ?? (holderName ? null : undefined);
    },
  });
  if (!drilled) {
    throw new CauseError('VIP_LEASE_NOT_HELD', {
      host: host.name,
      evidence: { command: `kubectl get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE}`, seen: seen || 'the lease was not read (interrupted)' },
    });
  }
  const others = servers.filter((s) => s !== drilled);
  if (!others.length) {
    throw new CauseError('FAILOVER_FAILED', {
      host: drilled.name,
      message: 'A single server cannot fail over',
      evidence: { seen: 'the inventory has one server: there is no other server to take the VIP' },
    });
  }
  const unit = roleOf(drilled).unit;
  let failoverMs: number;
  let newHolder: string | undefined;
  const stop = await ctx.remote(drilled).exec(`systemctl stop ${unit}`, { sudo: true, timeoutMs: 60_000 });
  try {
    if (stop.code !== 0)
      throw new CauseError('FAILOVER_FAILED', {
        host: drilled.name,
        message: `k3s could not be stopped on ${drilled.name} for the drill`,
        evidence: { command: `systemctl stop ${unit}`, exitCode: stop.code, seen: lastLine(stop) },
      });
    const t0 = ctx.clock.now();
    let last = { moved: false, seen: 'not tried' } as Awaited<ReturnType<typeof vipMoved>>;
    await poll(ctx, signal, {
      everyMs: 500,
      withinMs: FAILOVER_LIMIT_MS,
      look: async () => {
        last = await vipMoved(ctx, others, drilled.name);
        return last.moved || undefined;
      },
    });
    if (!last.moved) {
      throw new CauseError('FAILOVER_FAILED', {
        host: drilled.name,
        message: `The VIP did not move from ${drilled.name} within ${FAILOVER_LIMIT_MS / 1000} s (lease ${LEASE_TIMING.duration} s plus a margin)`,
        evidence: {
          command: `systemctl stop ${unit} (on ${drilled.name}); then from the other servers: GET https://${ctx.inventory.derived.apiEndpoint.host}:${ctx.inventory.derived.apiEndpoint.port}/readyz and GET ${VIP_HOLDER_READ.path}`,
          seen: last.seen,
        },
      });
    }
    failoverMs = ctx.clock.now() - t0;
    newHolder = last.holder;
  } finally {
    // Whatever happened: the drilled server's k3s runs again (not tied to the budget or Ctrl-C).
    await ctx
      .remote(drilled)
      .exec(`systemctl start ${unit}`, { sudo: true, timeoutMs: 120_000 })
      .catch(() => undefined);
  }
  const t1 = ctx.clock.now();
  let back = { ok: false, seen: 'not tried' };
  await poll(ctx, signal, {
    everyMs: 2_000,
    withinMs: REJOIN_LIMIT_MS,
    look: async () => {
      back = await backAsVoter(ctx, drilled, others[0]);
      return back.ok || undefined;
    },
  });
  if (!back.ok) {
    throw new CauseError('FAILOVER_FAILED', {
      host: drilled.name,
      message: `${drilled.name} did not come back as an etcd voter within ${REJOIN_LIMIT_MS / 1000} s after k3s was started again`,
      evidence: { command: `systemctl start ${unit}; k3s kubectl get --raw /db/info and kubectl get nodes on ${others[0].name}`, seen: back.seen },
    });
  }
  const detail = `VIP moved from ${drilled.name} to ${newHolder} in ${(failoverMs / 1000).toFixed(1)} s (limit ${FAILOVER_LIMIT_MS / 1000} s); ${drilled.name} back as a voter after ${((ctx.clock.now() - t1) / 1000).toFixed(1)} s`;
  ctx.emit({ type: 'check', phase: VERIFY_PHASE, check: 'failover-drill', title: 'failover drill', host: drilled.name, ok: true, detail });
}
