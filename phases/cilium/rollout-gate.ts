// Cilium's rollout gate, read live from the cluster (not from the template): the cilium DaemonSet rolled out
// on every node, every agent Ready and dialling the VIP, every node Ready. When this run wrote a new
// HelmChart, first its install: until a newer release revision is deployed the DaemonSet is the old one
// (release-wait.ts). A known failure in the log of any container of an agent pod — the init container it is
// stuck on (config fails first when the API is out of reach) or the agent itself — stops at once (the
// ClusterIP fallback of an empty k8sServiceHost, an API it cannot reach), unless that container was already
// waiting out kubelet's back-off when the gate first looked and has not run since: its log is of a run
// before this one (the cause may be fixed by now), so the gate waits for its next run, and names it from
// that old log only when the budget ends without one.
import { CauseError, stopOf } from '../../src/errors.ts';
import type { Gate } from '../../src/engine/phase.ts';
import { excerpt } from '../../src/k3s/remote.ts';
import { poll } from '../../src/engine/poll.ts';
import { apiRead, podLogPath } from '../../src/kube/api-read.ts';
import { checkAgentServiceHost, type AgentPod } from '../../src/addons/cilium-agent-env.ts';
import { matchCiliumAgentLog } from './agent-log.ts';
import { backedOffContainers, containersToRead, isStaleFailure } from './pod-containers.ts';
import { ciliumInstall, installState, installed, parseRevisions, revisionsRead, type Revision } from './release-wait.ts';
import { podsPullCause } from '../../src/images/pods.ts';
import { daemonSetRollout, podIsCurrent } from './rollout-judge.ts';

const POLL_MS = 3_000;
const AGENT_SELECTOR = 'k8s-app=cilium';

interface Seen {
  /** `current`: the pod runs the DaemonSet's current template (older ones are still to be replaced). */
  pods: (AgentPod & { ready: boolean; current: boolean; logContainers: string[]; item: any })[];
  notReadyNodes: { name: string; message: string }[];
  desired: number;
  /** The DaemonSet has rolled its current template out to every node (what `kubectl rollout status` waits for). */
  rolledOut: boolean;
  /** The agent pods as read (for their container states). */
  raw: any[];
  /** kubectl rollout status's words for where the rollout is. */
  rollout: string;
}

async function look(ctx: Parameters<Gate['run']>[1], host: Parameters<Gate['run']>[0]): Promise<Seen> {
  // Four reads of the API at once, through the run's SSH connection to the server (no process on it).
  const [pods, nodes, ds, revs] = await Promise.all([
    apiRead(ctx, host, {
      path: `/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent(AGENT_SELECTOR)}`,
      kubectl: `get pods -n kube-system -l ${AGENT_SELECTOR} -o json`,
    }),
    apiRead(ctx, host, { path: '/api/v1/nodes', kubectl: 'get nodes -o json' }),
    apiRead(ctx, host, { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium', kubectl: 'get daemonset -n kube-system cilium -o json' }),
    // The DaemonSet's revisions (filtered by owner in the judgement): which pods run the current template.
    apiRead(ctx, host, { path: '/apis/apps/v1/namespaces/kube-system/controllerrevisions', kubectl: 'get controllerrevisions -n kube-system -o json' }),
  ]);
  const d = ds.code === 0 ? JSON.parse(ds.stdout) : undefined;
  const revisions = d && revs.code === 0 ? (JSON.parse(revs.stdout).items as any[]) : [];
  const verdict = d ? daemonSetRollout(d) : { done: false, message: 'daemonsets.apps "cilium" not found' };
  const items = pods.code === 0 ? (JSON.parse(pods.stdout).items as any[]) : [];
  const nodeItems = nodes.code === 0 ? (JSON.parse(nodes.stdout).items as any[]) : [];
  return {
    rolledOut: verdict.done,
    rollout: verdict.message,
    raw: items,
    desired: nodeItems.length,
    pods: items.map((p) => {
      const container = (p.spec?.containers ?? []).find((c: any) => c.name === 'cilium-agent') ?? p.spec?.containers?.[0];
      const env = Object.fromEntries((container?.env ?? []).filter((e: any) => typeof e.value === 'string').map((e: any) => [e.name, e.value]));
      const ready = (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
      const current = podIsCurrent(p, d, revisions);
      return { name: p.metadata.name, node: p.spec?.nodeName, env, ready, current, logContainers: containersToRead(p), item: p };
    }),
    notReadyNodes: nodeItems
      .map((n) => ({ name: n.metadata.name, cond: (n.status?.conditions ?? []).find((c: any) => c.type === 'Ready') }))
      .filter((n) => n.cond?.status !== 'True')
      .map((n) => ({ name: n.name, message: n.cond?.message ?? 'no Ready condition' })),
  };
}

/** The first known failure in the log of a not-Ready agent pod of the current template (`skip`: logs not to go by). */
async function knownFailure(
  ctx: Parameters<Gate['run']>[1],
  host: Parameters<Gate['run']>[0],
  seen: Seen,
  kubernetesIp: string,
  skip: (pod: any, container: string) => boolean,
): Promise<CauseError | undefined> {
  for (const pod of seen.pods.filter((p) => !p.ready && p.current)) {
    for (const c of pod.logContainers) {
      if (skip(pod.item, c)) continue;
      const logs = await apiRead(ctx, host, {
        path: podLogPath('kube-system', pod.name, c, 40),
        kubectl: `logs -n kube-system ${pod.name} -c ${c} --tail=40`,
      }).catch(() => undefined);
      const known = logs?.code === 0 ? matchCiliumAgentLog(logs.stdout, kubernetesIp) : undefined;
      if (known)
        return new CauseError(known.causeId, {
          host: pod.node,
          evidence: { command: `kubectl logs -n kube-system ${pod.name} -c ${c}`, seen: known.line, excerpt: excerpt(logs!.stdout, 10) },
        });
    }
  }
  return undefined;
}

export const ciliumRolledOut: Gate = {
  id: 'cilium-rolled-out',
  title: 'Cilium agents Ready on every node, dialling the VIP; nodes Ready',
  budgetMs: 300_000,
  async run(host, ctx, signal) {
    const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
    const kubernetesIp = ctx.inventory.derived.serviceAddresses.kubernetes;
    let seen: Seen = { pods: [], notReadyNodes: [], desired: 0, rolledOut: false, rollout: '', raw: [] };
    const pending = ctx.facts.get(host.name, ciliumInstall);
    let revisions: Revision[] = [];
    let installDone = !pending;
    // Containers in back-off after a failed run at the gate's first look (see the header).
    let backedOff: Map<string, number> | undefined;
    const rolledOut = await poll(ctx, signal, {
      everyMs: POLL_MS,
      look: async () => {
        if (!installDone) {
          // Through the run's SSH connection, every 3 s while the install runs: no k3s process on the founder for it.
          const r = await apiRead(ctx, host, revisionsRead(pending!.release));
          if (r.code === 0) revisions = parseRevisions(r.stdout);
          installDone = installed(pending!, revisions);
          if (!installDone) return undefined;
        }
        seen = await look(ctx, host);
        backedOff ??= backedOffContainers(seen.raw);
        // Drift is a stop as soon as a pod of the CURRENT template shows it: that will not fix itself. Pods
        // of an older template are being replaced (a rerun that repairs a bad release rolls them away).
        const drift = checkAgentServiceHost(
          seen.pods.filter((p) => p.current),
          vip,
          port,
          kubernetesIp,
        );
        if (drift.length) throw stopOf(drift);
        // An agent whose image is on no node (air-gapped) never starts: name the image, not the timeout.
        const pull = podsPullCause(ctx, seen.raw);
        if (pull?.decided) throw pull.cause;
        const allReady = seen.pods.length >= seen.desired && seen.desired > 0 && seen.pods.every((p) => p.ready && p.current);
        if (allReady && seen.rolledOut && seen.notReadyNodes.length === 0) return true;
        const known = await knownFailure(ctx, host, seen, kubernetesIp, (pod, c) => isStaleFailure(backedOff!, pod, c));
        if (known) throw known;
        return undefined;
      },
    });
    if (rolledOut) return;
    if (!installDone) {
      const r = pending!.release;
      throw new CauseError('CILIUM_AGENTS_NOT_READY', {
        host: host.name,
        evidence: {
          command: `kubectl get secrets -n ${r.namespace} -l owner=helm,name=${r.name} -L version,status; kubectl get jobs -n kube-system helm-install-${r.name}`,
          seen: installState(pending!, revisions),
        },
      });
    }
    // Nothing newer came within the budget: a failure from before this run is the best word there is.
    const stale = await knownFailure(ctx, host, seen, kubernetesIp, () => false);
    if (stale) throw stale;
    const pull = podsPullCause(ctx, seen.raw);
    if (pull) throw pull.cause;
    const notReady = seen.pods.filter((p) => !p.ready);
    if (notReady.length || seen.pods.length < seen.desired || !seen.rolledOut) {
      throw new CauseError('CILIUM_AGENTS_NOT_READY', {
        host: notReady[0]?.node,
        evidence: {
          command: `kubectl get pods -n kube-system -l ${AGENT_SELECTOR}; kubectl rollout status -n kube-system daemonset/cilium`,
          seen: `${seen.pods.length - notReady.length} of ${seen.desired} agents Ready${notReady.length ? `; not Ready: ${notReady.map((p) => `${p.name} on ${p.node}`).join(', ')}` : ''}${seen.rolledOut ? '' : `; kubectl rollout status: ${seen.rollout.trim()}`}`,
        },
      });
    }
    const n = seen.notReadyNodes[0];
    throw new CauseError('NODE_NOT_READY', {
      host: n.name,
      evidence: { command: 'kubectl get nodes', seen: `${seen.notReadyNodes.map((x) => x.name).join(', ')} not Ready: ${n.message}` },
    });
  },
};
