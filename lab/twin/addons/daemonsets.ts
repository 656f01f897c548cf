// The DaemonSet controller and kubelet, only for the DaemonSets an add-on twin knows how to run (kube-vip,
// the Cilium agent): a pod per fitting node (Pod object with status, as `kubectl get pods -o wide` shows),
// its container run by a container runtime (on a lab host each container is its own process in the pod's
// cgroup, ../runtime/process-runtime.ts; tests on one machine run it inside the twin), a rolling update that
// replaces at most maxUnavailable pods at a time across the cluster, and the DaemonSet's status for
// `rollout status`.
// Which node, which store: every server runs one with the datastore itself and plays the controller for
// its own node and for the agents (nodes without the control-plane role, which run no controller of their
// own; kube-controller-manager runs on servers only); every node's kubelet runs the pods bound to it. An
// agent runs one without etcd, reading and writing through the API of the server it joined: kubelet only.
// The cluster-wide parts (status, rollout slots) are compare-and-swap writes, so servers may race.
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';
import { log } from '../log.ts';
import { kubernetesServiceIP } from '../service-network.ts';
import { type NodeContext, nowIso } from './context.ts';
import type { PodLogs } from './pod-logs.ts';
import { containerId } from '../runtime/tasks.ts';
import { pullWithBackOff } from '../runtime/image-pull.ts';
import { collectRevisions, constructHistory } from './revisions.ts';
import { type NodeView, containerEnv, maxUnavailable, nodeView, podFitsNode, podFromTemplate, templateHash } from './scheduling.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;
const DS = info('daemonsets');
const PODS = info('pods');
const NODES = info('nodes');
const SERVICE_ACCOUNTS = info('serviceaccounts');
const EVENTS = BUILTIN.find((x) => x.resource === 'events' && x.group === '')!;

export interface ContainerState {
  ready: boolean;
  /** Set while the container is not running: CrashLoopBackOff, ContainerCreating… */
  waiting?: { reason: string; message?: string };
  restartCount?: number;
  /** When the container's process started, if the runtime knows better than the kubelet (an adopted one). */
  startedAt?: string;
  /**
   * The pod's init containers, when the program runs them before its main container (the Cilium agent's
   * config, mount-cgroup, …): while one has not completed, the pod is Pending and not Initialized and the
   * main container waits with PodInitializing, as kubelet reports it.
   */
  initContainers?: InitContainerState[];
}

export interface Terminated {
  exitCode: number;
  reason: string;
  startedAt: string;
  finishedAt: string;
  message?: string;
}

/** One init container as status.initContainerStatuses[] shows it. */
export interface InitContainerState {
  name: string;
  restartCount: number;
  state: { waiting: { reason: string; message?: string } } | { running: { startedAt: string } } | { terminated: Terminated };
  lastState?: { terminated: Terminated };
}

export interface Running {
  stop(): Promise<void> | void;
  /** The kubelet goes away but the container goes on running (a runtime whose containers outlive k3s). */
  detach?(): void;
}

export interface StartArgs {
  ctx: NodeContext;
  pod: any;
  container: any;
  env: Record<string, string>;
  log(line: string): void;
  /** A logger for another container of the same pod (an init container), per run as kubelet keeps them. */
  logFor?(container: string, run: number): (line: string) => void;
  state(s: ContainerState): void;
  /** The pod's restart count when the kubelet started this container (-1: never ran); restartCount counts from it. */
  restartBase?: number;
}

/** An add-on twin: which DaemonSets it runs and how it starts their main container. */
export interface DaemonProgram {
  name: string;
  /** The container of the DaemonSet this program imitates, or undefined when it is not one of its. */
  container(ds: any): any | undefined;
  start(a: StartArgs): Running;
}

/** Who runs a pod's container: inside the twin (tests on one machine) or as its own process. */
export interface ContainerRuntime {
  start(program: DaemonProgram, a: StartArgs): Running;
  /** After a full reconcile: stop what runs for no pod of this kubelet. */
  prune?(): Promise<void>;
}

export const inProcessRuntime: ContainerRuntime = { start: (program, a) => program.start(a) };

const isReady = (pod: any) => (pod?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
const ownedBy = (pod: any, ds: any) => (pod.metadata?.ownerReferences ?? []).some((o: any) => o.uid === ds.metadata.uid);
const rolloutKey = (ds: any) => `/twin/ds-rollout/${ds.metadata.namespace}/${ds.metadata.name}`;
/** A node whose twin plays no DaemonSet controller: an agent (k3s runs kube-controller-manager on servers). */
const isAgentNode = (n: NodeView) => !Object.prototype.hasOwnProperty.call(n.labels, 'node-role.kubernetes.io/control-plane');

interface Slot {
  podName: string;
  uid: string;
  running: Running;
  last: string;
  /** The newest status not yet written, and whether a write is under way (writes go one at a time). */
  next?: any;
  writing: boolean;
}

export class DaemonSetKubelet {
  private slots = new Map<string, Slot>(); // by pod name
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private ctx: NodeContext,
    private logs: PodLogs,
    private programs: DaemonProgram[],
    private runtime: ContainerRuntime = inProcessRuntime,
  ) {}

  start(intervalMs = 2000): void {
    const tick = async () => {
      try {
        await this.reconcile();
      } catch (e) {
        if (!(e instanceof ApiError)) log.error(`add-on kubelet: ${(e as Error).message}`);
      }
      if (!this.stopped) this.timer = setTimeout(tick, intervalMs);
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const s of this.slots.values()) {
      if (s.running.detach) s.running.detach();
      else await s.running.stop();
    }
    this.slots.clear();
  }

  async reconcile(): Promise<void> {
    const { store } = this.ctx;
    await this.ctx.images?.ready;
    // Pods before Nodes: a pod's Node is then always in the list unless it was deleted (orphan GC below).
    // An agent plays only the kubelet: it asks for its own node's pods (the kubelet's pod source selects
    // spec.nodeName=<node>, kubernetes/kubernetes @00bdb3fa pkg/kubelet/config/apiserver.go) and needs no Nodes.
    const pods = this.ctx.etcd
      ? (await store.list(PODS)).items
      : (await store.list(PODS, undefined, { fieldSelector: `spec.nodeName=${this.ctx.node}` })).items;
    const nodes = this.ctx.etcd ? (await store.list(NODES)).items.map(nodeView) : [];
    const dss = (await store.list(DS)).items;
    // The controller's nodes: with the datastore (a server), this node and the agents; none on an agent.
    const controlled = this.ctx.etcd ? nodes.filter((n) => n.name === this.ctx.node || isAgentNode(n)) : [];
    const keep = new Set<string>();
    for (const ds of dss) {
      const program = this.programs.find((p) => p.container(ds));
      if (!program) continue;
      const hash = templateHash(ds.spec?.template);
      if (this.ctx.etcd) {
        const podHashes = new Set<string>(pods.filter((p) => ownedBy(p, ds)).map((p) => p.metadata.labels?.['controller-revision-hash']));
        await constructHistory(this.ctx.store, ds, hash, podHashes).catch(() => undefined);
      }
      let run: any;
      for (const n of controlled) {
        const r = await this.controlNode(ds, hash, n, nodes, pods);
        if (n.name === this.ctx.node) run = r;
      }
      // The kubelet's part: the pod of this DaemonSet bound to this node (the current revision first).
      if (!this.ctx.etcd) {
        const mine = pods.filter((p) => ownedBy(p, ds) && p.spec?.nodeName === this.ctx.node && !p.metadata?.deletionTimestamp);
        run = mine.find((p) => p.metadata.labels?.['controller-revision-hash'] === hash) ?? mine[0];
      }
      if (run) {
        keep.add(run.metadata.name);
        this.ensureRunning(program, ds, run);
      }
      if (this.ctx.etcd) await this.writeStatus(ds, hash, nodes, pods).catch(() => undefined);
    }
    if (this.ctx.etcd) {
      // The garbage collector's part: pods of a DaemonSet that is gone go too, and pods bound to a Node that
      // is gone (kube-controller-manager's pod GC of orphaned pods). Upstream runs it in whichever server's
      // controller-manager leads, so every server's twin collects every node's orphans: one slow or restarted
      // server does not keep its orphans alive. Its own kubelet part stops the process on its next tick.
      const live = new Set(dss.map((d) => d.metadata.uid));
      const names = new Set(nodes.map((n) => n.name));
      for (const p of pods) {
        const owner = (p.metadata?.ownerReferences ?? []).find((o: any) => o.kind === 'DaemonSet');
        if (!owner) continue;
        const node = p.spec?.nodeName;
        if (!live.has(owner.uid) || (node && !names.has(node))) await this.deletePod(p);
      }
      await collectRevisions(this.ctx.store, live).catch(() => undefined);
    }
    for (const [name, s] of this.slots) {
      if (keep.has(name)) continue;
      this.slots.delete(name);
      await s.running.stop();
    }
    await this.runtime.prune?.();
  }

  /** The DaemonSet controller for one node: its pod created, replaced (rolling update) or deleted. Returns the pod that node should run. */
  private async controlNode(ds: any, hash: string, node: NodeView, nodes: NodeView[], pods: any[]): Promise<any | undefined> {
    const mine = pods.filter((p) => ownedBy(p, ds) && p.spec?.nodeName === node.name);
    if (!podFitsNode(ds.spec?.template?.spec, node)) {
      for (const p of mine) await this.deletePod(p);
      return undefined;
    }
    const current = mine.find((p) => p.metadata.labels?.['controller-revision-hash'] === hash);
    const old = mine.filter((p) => p !== current);
    let run = current;
    if (!current && old.length === 0) run = await this.createPod(ds, hash, node.name);
    else if (!current) {
      // An outdated pod that is not available anyway is replaced at once; an available one waits for a
      // slot (kube-controller-manager daemon/update.go rollingUpdate).
      if (!old.some(isReady) || (await this.takeRolloutSlot(ds, hash, nodes, pods, node.name))) {
        for (const p of old) await this.deletePod(p);
        run = await this.createPod(ds, hash, node.name);
      } else run = old[0];
    } else for (const p of old) await this.deletePod(p);
    if (run && run === current && isReady(current)) await this.releaseRolloutSlot(ds, node.name).catch(() => undefined);
    return run;
  }

  private async createPod(ds: any, hash: string, node: string): Promise<any | undefined> {
    const pod = podFromTemplate(ds, node, hash);
    // The ServiceAccount admission plugin refuses a pod whose ServiceAccount does not exist; the DaemonSet
    // controller records that as a FailedCreate event and tries again later.
    const sa = pod.spec.serviceAccountName;
    if (sa && !(await this.ctx.store.tryGet(SERVICE_ACCOUNTS, pod.metadata.namespace, sa))) {
      await this.failedCreate(
        ds,
        node,
        `Error creating: pods "${ds.metadata.name}-" is forbidden: error looking up service account ${pod.metadata.namespace}/${sa}: serviceaccount "${sa}" not found`,
      );
      return undefined;
    }
    try {
      return await this.ctx.store.create(PODS, pod.metadata.namespace, pod);
    } catch (e) {
      if (e instanceof ApiError && e.reason === 'AlreadyExists') return this.ctx.store.get(PODS, pod.metadata.namespace, pod.metadata.name);
      throw e;
    }
  }

  private async failedCreate(ds: any, node: string, message: string): Promise<void> {
    const name = `${ds.metadata.name}.failedcreate-${node}`;
    const ns = ds.metadata.namespace;
    const cur = await this.ctx.store.tryGet(EVENTS, ns, name);
    const t = nowIso();
    if (cur) {
      await this.ctx.store.update(EVENTS, ns, name, { ...cur, count: (cur.count ?? 1) + 1, lastTimestamp: t, message }).catch(() => undefined);
      return;
    }
    await this.ctx.store
      .create(EVENTS, ns, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        type: 'Warning',
        reason: 'FailedCreate',
        message,
        involvedObject: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: ds.metadata.name, namespace: ns, uid: ds.metadata.uid },
        source: { component: 'daemonset-controller' },
        count: 1,
        firstTimestamp: t,
        lastTimestamp: t,
      })
      .catch(() => undefined);
  }

  private async deletePod(pod: any): Promise<void> {
    const s = this.slots.get(pod.metadata.name);
    if (s) {
      this.slots.delete(pod.metadata.name);
      await s.running.stop();
    }
    await this.ctx.store.delete(PODS, pod.metadata.namespace, pod.metadata.name).catch(() => undefined);
    await this.logs.clear(pod.metadata.namespace, pod.metadata.name);
  }

  private ensureRunning(program: DaemonProgram, ds: any, pod: any): void {
    const existing = this.slots.get(pod.metadata.name);
    if (existing && existing.uid === pod.metadata.uid) return;
    const container = program.container({ spec: { template: { spec: pod.spec } } }) ?? program.container(ds);
    const podWithIp = { ...pod, status: { ...(pod.status ?? {}), hostIP: this.ctx.ip } };
    const env = containerEnv(container, podWithIp, { host: kubernetesServiceIP(this.ctx.serviceCidr), port: '443' });
    const slot: Slot = { podName: pod.metadata.name, uid: pod.metadata.uid, last: '', running: { stop: () => undefined }, writing: false };
    this.slots.set(pod.metadata.name, slot);
    const startedAt = nowIso();
    const restartBase = pod.status?.containerStatuses?.[0]?.restartCount ?? -1;
    // A pod found with a status counts as a container restart, unless the runtime says otherwise (it adopted
    // the running container).
    let restarts = restartBase + 1;
    let reported = false;
    const write = (s: ContainerState) => {
      if (this.slots.get(pod.metadata.name) !== slot) return;
      reported = true;
      if (s.restartCount !== undefined) restarts = restartBase + 1 + s.restartCount;
      const status = this.podStatus(pod, container.name, container.image, s.startedAt ?? startedAt, s, restarts);
      const sig = JSON.stringify({ ...status, conditions: status.conditions.map((c: any) => c.status) });
      if (sig === slot.last) return;
      slot.last = sig;
      slot.next = status;
      void this.flushStatus(slot, pod);
    };
    const run = () => {
      slot.running = this.runtime.start(program, {
        ctx: this.ctx,
        pod: podWithIp,
        container,
        env,
        log: this.logs.writer(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, container.name),
        logFor: (name, run) => this.logs.writer(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, name, run),
        state: write,
        restartBase,
      });
    };
    const images = this.ctx.images;
    if (images && !images.has(container.image)) {
      slot.running = pullWithBackOff(images, container.image, write, () => {
        if (this.slots.get(pod.metadata.name) === slot) run();
      });
      return;
    }
    run();
    // Until the container reports (an adopted one reports at once).
    if (!reported) write({ ready: false, waiting: { reason: 'ContainerCreating' } });
  }

  /** Writes the slot's newest status; a failed write is retried until it lands or the pod is gone. */
  private async flushStatus(slot: Slot, pod: any): Promise<void> {
    if (slot.writing) return;
    slot.writing = true;
    try {
      while (slot.next && this.slots.get(pod.metadata.name) === slot) {
        const status = slot.next;
        try {
          await this.ctx.store.update(PODS, pod.metadata.namespace, pod.metadata.name, { status }, { onlyStatus: true });
          if (slot.next === status) slot.next = undefined;
        } catch (e) {
          if (e instanceof ApiError && e.reason === 'NotFound') return;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    } finally {
      slot.writing = false;
    }
  }

  private podStatus(pod: any, name: string, image: string, startedAt: string, s: ContainerState, restartCount: number): any {
    const t = nowIso();
    const cond = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: t });
    const inits = s.initContainers;
    // kubelet: Pending until every init container terminated with 0 (pkg/kubelet/kubelet_pods.go getPhase);
    // Initialized False naming the incomplete ones (pkg/kubelet/status/generate.go GeneratePodInitializedCondition).
    const incomplete = (inits ?? []).filter((c) => !('terminated' in c.state && c.state.terminated.exitCode === 0)).map((c) => c.name);
    const initialized = incomplete.length === 0;
    const initCond = initialized
      ? cond('Initialized', true)
      : { ...cond('Initialized', false), reason: 'ContainersNotInitialized', message: `containers with incomplete status: [${incomplete.join(' ')}]` };
    const specInits: any[] = pod.spec?.initContainers ?? [];
    // A container that never started (its image could not be pulled) leaves the pod Pending too.
    const neverStarted = s.waiting && /^(ErrImagePull|ImagePullBackOff)$/.test(s.waiting.reason);
    return {
      phase: initialized && !neverStarted ? 'Running' : 'Pending',
      hostIP: this.ctx.ip,
      hostIPs: [{ ip: this.ctx.ip }],
      podIP: this.ctx.ip,
      podIPs: [{ ip: this.ctx.ip }],
      startTime: pod.status?.startTime ?? startedAt,
      qosClass: 'BestEffort',
      conditions: [cond('PodReadyToStartContainers', true), initCond, cond('Ready', s.ready), cond('ContainersReady', s.ready), cond('PodScheduled', true)],
      ...(inits
        ? {
            initContainerStatuses: inits.map((c) => {
              const ran = !('waiting' in c.state) || c.lastState;
              return {
                name: c.name,
                image: specInits.find((x) => x.name === c.name)?.image ?? image,
                imageID: '',
                ...(ran ? { containerID: `containerd://${containerId(pod.metadata.uid, `${c.name}-${c.restartCount}`)}` } : {}),
                ready: 'terminated' in c.state && c.state.terminated.exitCode === 0,
                started: 'running' in c.state,
                restartCount: c.restartCount,
                state: c.state,
                lastState: c.lastState ?? {},
              };
            }),
          }
        : {}),
      containerStatuses: [
        {
          name,
          image,
          imageID: '',
          ...(s.waiting?.reason === 'PodInitializing' ? {} : { containerID: `containerd://${containerId(pod.metadata.uid, name)}` }),
          ready: s.ready,
          started: !s.waiting,
          restartCount,
          state: s.waiting ? { waiting: s.waiting } : { running: { startedAt } },
        },
      ],
    };
  }

  /** May this node replace its outdated pod now? At most maxUnavailable pods of the DaemonSet down at once. */
  private async takeRolloutSlot(ds: any, hash: string, nodes: NodeView[], pods: any[], node: string): Promise<boolean> {
    const etcd = this.ctx.etcd!;
    const fitting = nodes.filter((n) => podFitsNode(ds.spec?.template?.spec, n)).map((n) => n.name);
    const limit = maxUnavailable(ds, fitting.length);
    const kv = await etcd.get(rolloutKey(ds));
    const slots: Record<string, string> = kv ? JSON.parse(kv.value) : {};
    const owned = pods.filter((p) => ownedBy(p, ds));
    const readyNew = (n: string) => owned.some((p) => p.spec?.nodeName === n && p.metadata.labels?.['controller-revision-hash'] === hash && isReady(p));
    const busy = new Set<string>();
    for (const n of Object.keys(slots)) if (slots[n] === hash && !readyNew(n) && n !== node) busy.add(n);
    for (const n of fitting) {
      if (n === node) continue;
      const p = owned.find((x) => x.spec?.nodeName === n);
      if (!p || !isReady(p)) busy.add(n);
    }
    if (busy.size >= limit) return false;
    const next = Object.fromEntries(Object.entries(slots).filter(([n, h]) => h === hash && !readyNew(n)));
    next[node] = hash;
    const r = await etcd.putIf(rolloutKey(ds), JSON.stringify(next), kv?.modRevision ?? 0);
    return r.ok;
  }

  private async releaseRolloutSlot(ds: any, node: string): Promise<void> {
    const etcd = this.ctx.etcd!;
    const kv = await etcd.get(rolloutKey(ds));
    if (!kv) return;
    const slots: Record<string, string> = JSON.parse(kv.value);
    if (!(node in slots)) return;
    delete slots[node];
    await etcd.putIf(rolloutKey(ds), JSON.stringify(slots), kv.modRevision);
  }

  private async writeStatus(ds: any, hash: string, nodes: NodeView[], pods: any[]): Promise<void> {
    const fitting = new Set(nodes.filter((n) => podFitsNode(ds.spec?.template?.spec, n)).map((n) => n.name));
    const owned = pods.filter((p) => ownedBy(p, ds) && fitting.has(p.spec?.nodeName));
    const ready = owned.filter(isReady).length;
    const status = {
      currentNumberScheduled: new Set(owned.map((p) => p.spec.nodeName)).size,
      desiredNumberScheduled: fitting.size,
      numberAvailable: ready,
      numberMisscheduled: 0,
      numberReady: ready,
      numberUnavailable: Math.max(0, fitting.size - ready),
      observedGeneration: ds.metadata.generation ?? 1,
      updatedNumberScheduled: owned.filter((p) => p.metadata.labels?.['controller-revision-hash'] === hash).length,
    };
    if (JSON.stringify(ds.status ?? {}) === JSON.stringify(status)) return;
    await this.ctx.store.update(DS, ds.metadata.namespace, ds.metadata.name, { status }, { onlyStatus: true, expectedRV: ds.metadata.resourceVersion });
  }
}
