// After a host's rolling restart, before the next host is touched: it must be back. For a server: its API
// ready, its Node Ready on the target version, its etcd member a voter again, the VIP answering with the
// cluster CA (k3s.yaml's CA: a certificate of another cluster fails TLS). For an agent: its Node Ready on the
// target version. For both: the Cilium agent on the node Ready and dialling the VIP (when Cilium is
// installed). Only a host whose k3s this run restarted (or one a stopped run left cordoned) is gated.
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { Gate, HostRef } from '../../src/engine/phase.ts';
import { poll } from '../../src/engine/poll.ts';
import { checkAgentServiceHost } from '../../src/addons/cilium-agent-env.ts';
import { MEMBER_LIST_COMMAND, MEMBER_LIST_READ, compareMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { excerpt, journalSince, NOT_FOUND } from '../../src/k3s/remote.ts';
import { apiRead, readyzFrom } from '../../src/kube/api-read.ts';
import { OWN_API } from '../../src/kube/get-through.ts';
import { lastLines } from '../../src/util/text.ts';
import { journalCursor } from './facts.ts';
import { cordonedByRun, otherMember, rollingRestart, rollingView, targetBinary } from './rolling-facts.ts';

const BACK_BUDGET_MS = 300_000;
const POLL_MS = 2_000;

/** Is this host gated: restarted this run, or left cordoned by a rolling change that stopped? */
const gated = (host: HostRef, ctx: RunContext) => ctx.facts.get(host.name, rollingRestart) === true || (ctx.facts.run(cordonedByRun) ?? []).includes(host.name);

type Look = { ok: true } | { ok: false; seen: string; command: string };

async function nodeOnTarget(ctx: RunContext, via: HostRef, host: HostRef, version: string): Promise<Look> {
  const q = `get node ${host.name} -o jsonpath='{.status.nodeInfo.kubeletVersion} {range .status.conditions[?(@.type=="Ready")]}{.status}{end}'`;
  // Through the run's SSH connection to `via` (the jsonpath's two fields), `k3s kubectl` there without a kubeconfig.
  const read = {
    path: `/api/v1/nodes/${host.name}`,
    kubectl: q,
    print: (n: any) => `${n?.status?.nodeInfo?.kubeletVersion ?? ''} ${(n?.status?.conditions ?? []).find((c: any) => c?.type === 'Ready')?.status ?? ''}`,
  };
  const r = await apiRead(ctx, via, read, 10_000).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  const [kubelet = '', ready = ''] = r.stdout.trim().split(' ');
  if (r.code === 0 && kubelet === version && ready === 'True') return { ok: true };
  return {
    ok: false,
    command: `GET /api/v1/nodes/${host.name} (${via.name}'s API; k3s kubectl ${q} there without a kubeconfig)`,
    seen:
      r.code === 0
        ? `Node ${host.name}: kubelet ${kubelet || '?'} (target ${version}), Ready ${ready || 'unknown'}`
        : lastLines(`${r.stdout}${r.stderr}`, 1).trim(),
  };
}

async function serverServes(ctx: RunContext, host: HostRef): Promise<Look> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  // The host's own API, its etcd member and the VIP, each through the run's SSH connection to it: no k3s
  // process is started on a server that is starting k3s (every 2 s while it comes back).
  const own = await readyzFrom(ctx, host, OWN_API.address, OWN_API.port).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  if (own.code !== 0 || own.stdout.trim() !== 'ok')
    return {
      ok: false,
      command: `GET https://${OWN_API.address}:${OWN_API.port}/readyz from ${host.name}`,
      seen: `${host.name}'s API: ${lastLines(`${own.stdout}${own.stderr}`, 1).trim() || 'no answer'}`,
    };
  const list = await apiRead(ctx, host, MEMBER_LIST_READ, 10_000);
  const members = readMembers(list);
  const verdict = members && compareMembers(members, [host]);
  if (!verdict?.voters[host.name])
    return {
      ok: false,
      command: MEMBER_LIST_COMMAND,
      seen: verdict ? `${host.name}: ${verdict.missing[0]?.why ?? 'not a voter'}` : 'the member list did not answer',
    };
  const v = await readyzFrom(ctx, host, vip, port).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  if (v.code !== 0 || v.stdout.trim() !== 'ok')
    return {
      ok: false,
      command: `GET https://${vip}:${port}/readyz from ${host.name}`,
      seen: `the VIP from ${host.name}: ${lastLines(`${v.stdout}${v.stderr}`, 1).trim() || 'no answer'}`,
    };
  return { ok: true };
}

/** The Cilium agent pod on the node: Ready, and dialling the VIP. No Cilium DaemonSet: nothing to judge yet. */
async function ciliumAgentReady(ctx: RunContext, via: HostRef, host: HostRef): Promise<Look> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  const q = `get pods -n kube-system -l k8s-app=cilium --field-selector spec.nodeName=${host.name} -o json --request-timeout=5s`;
  const path = `/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dcilium&fieldSelector=spec.nodeName%3D${host.name}`;
  const shown = `GET ${path} (${via.name}'s API; k3s kubectl ${q} there without a kubeconfig)`;
  const r = await apiRead(ctx, via, { path, kubectl: q }, 10_000).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  if (r.code !== 0) return { ok: false, command: shown, seen: lastLines(`${r.stdout}${r.stderr}`, 1).trim() };
  const pods = (JSON.parse(r.stdout).items ?? []) as any[];
  if (!pods.length) {
    const ds = await apiRead(
      ctx,
      via,
      { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium', kubectl: 'get daemonset -n kube-system cilium -o name' },
      10_000,
    ).catch(() => undefined);
    if (ds && ds.code !== 0 && NOT_FOUND.test(ds.stderr)) return { ok: true };
    return { ok: false, command: shown, seen: `no Cilium agent pod on ${host.name} yet` };
  }
  const pod = pods[0];
  const ready = (pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready')?.status === 'True';
  if (!ready)
    return {
      ok: false,
      command: shown,
      seen: `Cilium agent ${pod.metadata?.name} on ${host.name} is not Ready (${pod.status?.phase ?? 'no phase'})`,
    };
  const container = (pod.spec?.containers ?? []).find((c: any) => c.name === 'cilium-agent') ?? pod.spec?.containers?.[0];
  const env = Object.fromEntries(((container?.env ?? []) as any[]).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
  const drift = checkAgentServiceHost([{ name: pod.metadata?.name, node: host.name, env }], vip, port, '');
  if (drift.length) return { ok: false, command: shown, seen: drift[0].evidence.seen ?? 'the agent does not dial the VIP' };
  return { ok: true };
}

export const backAfterRestart: Gate = {
  id: 'back-after-restart',
  title: 'back after the restart: Node Ready on the target version, API, etcd voter, VIP, Cilium agent',
  budgetMs: BACK_BUDGET_MS,
  async run(host, ctx, signal) {
    if (!gated(host, ctx)) return;
    const version = ctx.facts.need(targetBinary).version;
    const via = host.role === 'server' ? host : otherMember(host, ctx, ctx.facts.run(rollingView));
    let last: Look = { ok: false, command: '', seen: 'not looked yet' };
    const back = await poll(ctx, signal, {
      everyMs: POLL_MS,
      look: async () => {
        for (const look of [
          () => nodeOnTarget(ctx, via, host, version),
          ...(host.role === 'server' ? [() => serverServes(ctx, host)] : []),
          () => ciliumAgentReady(ctx, via, host),
        ]) {
          last = await look().catch((e: Error) => ({ ok: false as const, command: '', seen: e.message }));
          if (!last.ok) return undefined;
        }
        return true;
      },
    });
    if (back) return;
    signal.throwIfAborted();
    const journal = await journalSince(ctx, host, ctx.facts.get(host.name, journalCursor), 40).catch(() => '');
    const failed = last as Extract<Look, { ok: false }>;
    throw new CauseError('ROLLING_SERVER_NOT_BACK', {
      host: host.name,
      message: `${host.name} is not back within ${BACK_BUDGET_MS / 1000} s of its restart: ${failed.seen}`,
      evidence: {
        command: `${failed.command}; journalctl -u ${host.role === 'server' ? 'k3s' : 'k3s-agent'}`,
        seen: failed.seen,
        excerpt: excerpt(journal, 15),
      },
    });
  },
};
