// Flux's controllers as pods: kube-controller-manager's Deployment controller and the kubelet for the four
// Deployments of flux-system, so `kubectl -n flux-system get pods` shows what a real cluster shows and a
// controller that cannot start looks as upstream's does. Per controller Deployment:
//   - the Deployment controller (every server computes the same thing; the pods' names are deterministic, so
//     racing servers create each pod once): pods `<deploy>-<pod-template-hash>-<5 chars>` with the
//     template's labels plus `pod-template-hash`, replaced as `spec.strategy` says — Recreate (source-
//     controller's, upstream's own manifest) removes the old pods before it creates the new one; RollingUpdate
//     (the others') surges a new pod and removes an old one only while the Deployment keeps its minimum
//     availability, so a new pod that never becomes Ready leaves the old one serving
//     (kubernetes/kubernetes pkg/controller/deployment/rolling.go reconcileNewReplicaSet, reconcileOldReplicaSets,
//     cleanupUnhealthyReplicas; recreate.go; util/deployment_util.go MaxSurge, MaxUnavailable,
//     ResolveFenceposts); and the Deployment's status with Available and Progressing in its words
//     (sync.go calculateStatus; progress.go syncRolloutStatus; util/deployment_util.go reasons);
//   - the kubelet of the pod's node: its one container `manager` started as the controller's binary starts —
//     it refuses a feature gate it does not support with its own log line and exit code 1 (fluxcd/pkg
//     runtime/v0.110.0 runtime/features/features.go SupportedFeatures: `feature-gate '%s' not supported`; each
//     controller's main.go: `setupLog.Error(err, "unable to load feature gates")`, os.Exit(1)), and then
//     restarted as kubelet restarts a failed container: at once after its first exit, then after a back-off of
//     10 s doubling to 5 min, `CrashLoopBackOff` `back-off <d> restarting failed container=<c> pod=<pod>_<ns>(<uid>)`
//     meanwhile (pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff; client-go util/flowcontrol Backoff:
//     no entry before the first exit, so no back-off then), lastState.terminated with the exit code and
//     containerd's reason `Error`, restartCount counting the restarts.
// A controller's reconcile loop runs (on whichever server holds its Lease, ./index.ts) only while a pod of its
// Deployment is Running with its container ready: a crash-looping source-controller fetches nothing.
import { ApiError } from '../../api/status.ts';
import { containerId } from '../../runtime/tasks.ts';
import { BACKOFF_MAX_MS, BACKOFF_START_MS, backOffMessage } from '../cilium/init-containers.ts';
import type { AddonContext } from '../context.ts';
import type { PodLogs } from '../pod-logs.ts';
import { FLUX_NS, builtin } from './common.ts';
import { condition, deploymentStatus, podAvailable, podFor, podTemplateHash, podsOf, rolloutPlan } from '../deployment-rollout.ts';

// The Deployment controller's pure parts live in ../deployment-rollout.ts; the Flux pods' tests read them here.
export { deploymentStatus, fenceposts, podFor, podName, podTemplateHash, podsOf, replicaSetName, rolloutPlan } from '../deployment-rollout.ts';

const PODS = builtin('pods');
const DEPLOYMENTS = builtin('deployments');

/**
 * The feature gates each controller of the lab's Flux release supports (its internal/features/features.go
 * `features` map plus fluxcd/pkg auth/v0.54.0 SetFeatureGates' ObjectLevelWorkloadIdentity): source-controller
 * v1.9.0, kustomize-controller v1.9.0, helm-controller v1.6.0, notification-controller v1.9.0.
 */
const FEATURE_GATES: Record<string, string[]> = {
  'source-controller': ['CacheSecretsAndConfigMaps', 'ObjectLevelWorkloadIdentity'],
  'kustomize-controller': [
    'CacheSecretsAndConfigMaps',
    'DisableStatusPollerCache',
    'DisableFailFastBehavior',
    'StrictPostBuildSubstitutions',
    'GroupChangeLog',
    'AdditiveCELDependencyCheck',
    'ExternalArtifact',
    'CancelHealthCheckOnNewRevision',
    'DisableConfigWatchers',
    'DirectSourceFetch',
    'MigrateAPIVersion',
    'ObjectLevelWorkloadIdentity',
  ],
  'helm-controller': [
    'CacheSecretsAndConfigMaps',
    'DetectDrift',
    'CorrectDrift',
    'AllowDNSLookups',
    'OOMWatch',
    'AdoptLegacyReleases',
    'DisableChartDigestTracking',
    'AdditiveCELDependencyCheck',
    'ExternalArtifact',
    'DisableConfigWatchers',
    'DirectSourceFetch',
    'UseHelm3Defaults',
    'CancelHealthCheckOnNewRevision',
    'DefaultToRetryOnFailure',
    'ObjectLevelWorkloadIdentity',
  ],
  'notification-controller': ['CacheSecretsAndConfigMaps', 'DisableConfigWatchers', 'ObjectLevelWorkloadIdentity'],
};

/**
 * A line of the controllers' logger with `--log-encoding=json`: zap's JSON encoder with the production
 * encoder config (keys level, ts, logger, msg), lower-case levels and ISO 8601 times (fluxcd/pkg
 * runtime/v0.110.0 runtime/logger/logger.go NewLogger; controller-runtime v0.24 pkg/log/zap newJSONEncoder),
 * the fields after the message as zapr writes logr's key/value pairs (an error under "error").
 */
function zapLine(level: 'info' | 'error', msg: string, fields: Record<string, unknown> = {}, at = new Date()): string {
  return JSON.stringify({ level, ts: at.toISOString(), logger: 'setup', msg, ...fields });
}

/** The `--feature-gates` pairs of a container's args, in order (cliflag MapStringBool: `k=v,k=v`, the flag given as `--f=v` or `--f v`). */
export function featureGateArgs(args: string[]): [string, boolean][] {
  const out: [string, boolean][] = [];
  args.forEach((a, i) => {
    const v = a.startsWith('--feature-gates=') ? a.slice('--feature-gates='.length) : a === '--feature-gates' ? args[i + 1] : undefined;
    for (const pair of (v ?? '').split(',').filter(Boolean)) {
      const [k, b] = pair.split('=');
      out.push([k.trim(), (b ?? '').trim() === 'true']);
    }
  });
  return out;
}

/**
 * What the controller's binary logs from its start until the manager starts, and the exit code when it stops
 * there: a gate it does not know ends it (SupportedFeatures returns at the first unknown key; upstream's map
 * order is random, the twin keeps the args' order).
 */
export function controllerStart(controller: string, args: string[], at = new Date()): { lines: string[]; exitCode?: number } {
  const supported = FEATURE_GATES[controller] ?? [];
  const lines: string[] = [];
  for (const [k, v] of featureGateArgs(args)) {
    if (!supported.includes(k)) {
      lines.push(zapLine('error', 'unable to load feature gates', { error: `feature-gate '${k}' not supported` }, at));
      return { lines, exitCode: 1 };
    }
    lines.push(zapLine('info', 'loading feature gate', { [k]: v }, at));
  }
  lines.push(zapLine('info', 'starting manager', {}, at));
  return { lines };
}

/**
 * Where a new pod goes: the first Ready server by name that is not cordoned (every server picks the same;
 * the Flux twins run on servers only), so a drained server's controller pod comes back on another server.
 * The scheduler's scoring across all nodes is not imitated.
 */
export function placement(nodes: any[]): string | undefined {
  const ready = nodes.filter(
    (n) =>
      Object.prototype.hasOwnProperty.call(n.metadata?.labels ?? {}, 'node-role.kubernetes.io/control-plane') &&
      condition(n, 'Ready')?.status === 'True' &&
      !n.spec?.unschedulable,
  );
  return ready.map((n) => n.metadata.name).sort()[0];
}

interface Terminated {
  exitCode: number;
  reason: string;
  startedAt: string;
  finishedAt: string;
  containerID: string;
}

/** One container on this node: what the kubelet knows of it. */
interface Container {
  uid: string;
  restartCount: number;
  state: { running: { startedAt: string } } | { waiting: { reason: string; message: string } };
  lastState?: { terminated: Terminated };
  /** kubelet's back-off entry for the container (none before its first exit). */
  backoffMs?: number;
  timer?: NodeJS.Timeout;
  written: string;
}

const iso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The Deployment controller and the kubelet for Flux's controller Deployments (one per server twin). */
/** flux-system's Deployments and pods and the cluster's Nodes, as one read saw them. */
export interface FluxSeen {
  deployments: any[];
  pods: any[];
  nodes: any[];
}

export class FluxPods {
  private containers = new Map<string, Container>(); // by pod uid
  private stopped = false;

  constructor(
    private ctx: AddonContext,
    private logs: PodLogs,
  ) {}

  /**
   * One round for one controller, from what the round's read saw (FluxControllers.seen): its pods made and
   * replaced, this node's containers run, the Deployment's status written. True when a pod of it runs with its
   * container ready (the controller works).
   */
  async sync(controller: string, d: any | undefined, seen: FluxSeen): Promise<boolean> {
    const all = seen.pods.filter((p) => p.metadata?.labels?.app === controller);
    if (!d) {
      // The Deployment is gone: its pods go with it (garbage collection of the ReplicaSets' pods).
      for (const p of all) await this.deletePod(p);
      return false;
    }
    const hash = podTemplateHash(d.spec?.template);
    const nodes = seen.nodes;
    const names = new Set(nodes.map((n) => n.metadata.name));
    let pods = podsOf(d, all);
    // Pod GC: a pod bound to a Node that no longer exists (a replaced server) is deleted; its ReplicaSet makes another.
    for (const p of pods.filter((x) => x.spec?.nodeName && !names.has(x.spec.nodeName))) await this.deletePod(p);
    pods = pods.filter((x) => !x.spec?.nodeName || names.has(x.spec.nodeName));
    const plan = rolloutPlan(d, pods, hash);
    for (const p of plan.remove) await this.deletePod(p);
    pods = pods.filter((p) => !plan.remove.includes(p));
    const node = placement(nodes);
    if (node) {
      const taken = new Set(pods.map((p) => p.metadata.name));
      for (let slot = 0, made = 0; made < plan.create && slot < 100; slot++) {
        const pod = podFor(d, hash, slot, node);
        if (taken.has(pod.metadata.name)) continue;
        made++;
        const created = await this.ctx.store.create(PODS, FLUX_NS, pod).catch((e) => {
          if (e instanceof ApiError && e.reason === 'AlreadyExists') return this.ctx.store.tryGet(PODS, FLUX_NS, pod.metadata.name);
          throw e;
        });
        if (created) pods.push(created);
      }
    }
    // The kubelet's part: this node's pods.
    for (const p of pods) if (p.spec?.nodeName === this.ctx.node) this.ensure(controller, p);
    const status = deploymentStatus(d, pods, hash);
    const same = (a: any, b: any) =>
      JSON.stringify({ ...a, conditions: a?.conditions?.map((c: any) => [c.type, c.status, c.reason, c.message]) }) ===
      JSON.stringify({ ...b, conditions: b?.conditions?.map((c: any) => [c.type, c.status, c.reason, c.message]) });
    if (!same(d.status ?? {}, status)) {
      await this.ctx.store
        .update(DEPLOYMENTS, FLUX_NS, d.metadata.name, { status }, { onlyStatus: true, expectedRV: d.metadata.resourceVersion })
        .catch(() => undefined);
    }
    return pods.some((p) => p.status?.phase === 'Running' && podAvailable(p));
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.containers.values()) clearTimeout(c.timer);
    this.containers.clear();
  }

  private async deletePod(p: any): Promise<void> {
    const c = this.containers.get(p.metadata.uid);
    if (c) {
      clearTimeout(c.timer);
      this.containers.delete(p.metadata.uid);
    }
    await this.ctx.store.delete(PODS, p.metadata.namespace, p.metadata.name).catch(() => undefined);
    await this.logs.clear(p.metadata.namespace, p.metadata.name);
  }

  /** Runs the pod's container on this node, once per pod. A pod found Running and ready (this twin restarted) is adopted: real containers outlive k3s. */
  private ensure(controller: string, pod: any): void {
    if (this.containers.has(pod.metadata.uid)) return;
    const st = pod.status?.containerStatuses?.[0];
    const c: Container = { uid: pod.metadata.uid, restartCount: st?.restartCount ?? 0, state: { running: { startedAt: iso() } }, written: '' };
    this.containers.set(pod.metadata.uid, c);
    const args: string[] = pod.spec?.containers?.[0]?.args ?? [];
    if (st?.ready && st.state?.running && controllerStart(controller, args).exitCode === undefined) {
      c.state = { running: { startedAt: st.state.running.startedAt } };
      c.lastState = st.lastState?.terminated ? st.lastState : undefined;
      void this.write(pod, c);
      return;
    }
    if (st) c.restartCount = (st.restartCount ?? 0) + (st.state?.running || st.state?.terminated ? 1 : 0);
    this.start(controller, pod, c);
  }

  /** One start of the container: the binary's lines in this run's log, then running, or exited and restarted with kubelet's back-off. */
  private start(controller: string, pod: any, c: Container): void {
    if (this.stopped || this.containers.get(pod.metadata.uid) !== c) return;
    const startedAt = iso();
    const name = pod.spec?.containers?.[0]?.name ?? 'manager';
    const log = this.logs.writer(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, name, c.restartCount);
    const out = controllerStart(controller, pod.spec?.containers?.[0]?.args ?? []);
    for (const line of out.lines) log(line);
    if (out.exitCode === undefined) {
      c.state = { running: { startedAt } };
      void this.write(pod, c);
      return;
    }
    const terminated: Terminated = {
      exitCode: out.exitCode,
      reason: 'Error',
      startedAt,
      finishedAt: iso(),
      containerID: `containerd://${containerId(pod.metadata.uid, `${name}-${c.restartCount}`)}`,
    };
    c.lastState = { terminated };
    const restart = () => {
      c.restartCount++;
      this.start(controller, pod, c);
    };
    if (c.backoffMs === undefined) {
      // The first exit: no back-off entry yet, so the next sync starts the container again at once.
      c.backoffMs = BACKOFF_START_MS;
      c.timer = setTimeout(restart, 500);
      return;
    }
    c.state = { waiting: { reason: 'CrashLoopBackOff', message: backOffMessage(c.backoffMs, name, pod) } };
    void this.write(pod, c);
    const wait = c.backoffMs;
    c.timer = setTimeout(() => {
      c.backoffMs = Math.min((c.backoffMs ?? BACKOFF_START_MS) * 2, BACKOFF_MAX_MS);
      restart();
    }, wait);
  }

  /** The pod's status as kubelet writes it (pkg/kubelet/status/generate.go: ContainersNotReady, `containers with unready status: [<c>]`). */
  private async write(pod: any, c: Container): Promise<void> {
    const name = pod.spec?.containers?.[0]?.name ?? 'manager';
    const ready = 'running' in c.state;
    const t = iso();
    const cond = (type: string, ok: boolean) => ({
      type,
      status: ok ? 'True' : 'False',
      lastProbeTime: null,
      lastTransitionTime: t,
      ...(ok || (type !== 'Ready' && type !== 'ContainersReady') ? {} : { reason: 'ContainersNotReady', message: `containers with unready status: [${name}]` }),
    });
    const status = {
      phase: 'Running',
      hostIP: this.ctx.ip,
      hostIPs: [{ ip: this.ctx.ip }],
      podIP: this.ctx.ip,
      podIPs: [{ ip: this.ctx.ip }],
      startTime: pod.status?.startTime ?? t,
      qosClass: pod.spec?.containers?.some((x: any) => x.resources?.requests || x.resources?.limits) ? 'Burstable' : 'BestEffort',
      conditions: [
        cond('PodReadyToStartContainers', true),
        cond('Initialized', true),
        cond('Ready', ready),
        cond('ContainersReady', ready),
        cond('PodScheduled', true),
      ],
      containerStatuses: [
        {
          name,
          image: pod.spec?.containers?.[0]?.image ?? '',
          imageID: '',
          containerID: `containerd://${containerId(pod.metadata.uid, `${name}-${c.restartCount}`)}`,
          ready,
          started: ready,
          restartCount: c.restartCount,
          state: c.state,
          lastState: c.lastState ?? {},
        },
      ],
    };
    const sig = JSON.stringify({ ...status, conditions: status.conditions.map((x) => x.status) });
    if (sig === c.written) return;
    c.written = sig;
    await this.ctx.store.update(PODS, pod.metadata.namespace, pod.metadata.name, { status }, { onlyStatus: true }).catch(() => {
      c.written = '';
    });
  }
}
