// kube-controller-manager's Deployment controller for plain workloads (every Deployment another twin does not
// own: Flux's controllers have ./flux/pods.ts, CoreDNS and the Cilium operator have their status written by
// ./coredns.ts and ./cilium/operator.ts and no pods), run by the server holding the controller manager's
// Lease (./controller-manager.ts). Per Deployment: pods `<deploy>-<pod-template-hash>-<5 random chars>`
// (upstream's ReplicaSet generateName) with an owner reference to the ReplicaSet `<deploy>-<hash>` (the
// ReplicaSet object itself is not stored: the reference carries the Deployment's uid), created and removed
// as the rollout plan says (./deployment-rollout.ts), placed on schedulable nodes, spread (./workload-
// placement.ts); a pod evicted or deleted is replaced at the next round; a pod on a Node that no longer
// exists is deleted (pod GC), as are pods whose Deployment is gone (garbage collector). The Deployment's
// status as the controller writes it (deploymentStatus).
//
// No container runs: standing in for the pod's kubelet, the leader marks a pod Running and Ready once it
// has been bound for a second and its node is Ready — if the image is on the leader's node (the image
// archives are the same on every lab node) or pullable; otherwise the pod stays Pending with its container
// waiting `ErrImagePull` and the CRI's pull error, as kubelet reports it.
import { randomBytes } from 'node:crypto';
import { ApiError } from '../api/status.ts';
import { BUILTIN } from '../api/resources.ts';
import type { AddonContext } from './context.ts';
import { ALPHABET, deploymentStatus, podAvailable, podFor, podTemplateHash, podsOf, replicaSetName, rolloutPlan } from './deployment-rollout.ts';
import { pickNode, schedulableNodes } from './workload-placement.ts';

const PODS = BUILTIN.find((r) => r.resource === 'pods')!;
const DEPLOYMENTS = BUILTIN.find((r) => r.resource === 'deployments')!;
const NODES = BUILTIN.find((r) => r.resource === 'nodes')!;
const REPLICASETS = BUILTIN.find((r) => r.resource === 'replicasets')!;

/** How long a bound pod waits before its stand-in kubelet reports it running. */
const START_DELAY_MS = 1000;

const FLUX = ['source-controller', 'kustomize-controller', 'helm-controller', 'notification-controller'];

/** Deployments whose pods (or the lack of them) another twin keeps. */
export const ownedElsewhere = (d: any) =>
  (d.metadata.namespace === 'flux-system' && FLUX.includes(d.metadata.name)) ||
  (d.metadata.namespace === 'kube-system' && d.metadata.name === 'coredns') ||
  d.metadata.name === 'cilium-operator';

/** `<replicaset>-<5 chars>` as the ReplicaSet's generateName gives it (utilrand.String(5)). */
const newPodName = (d: any, hash: string) => `${replicaSetName(d, hash)}-${[...randomBytes(5)].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;

const iso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The status kubelet writes for a pod whose one container runs (or waits for its image). */
function runningStatus(pod: any, hostIP: string, waiting?: { reason: string; message: string }): any {
  const t = iso();
  const containers = pod.spec?.containers ?? [];
  const ready = !waiting;
  const unready = { reason: 'ContainersNotReady', message: `containers with unready status: [${containers.map((c: any) => c.name).join(' ')}]` };
  const cond = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: t, ...(ok ? {} : unready) });
  return {
    phase: ready ? 'Running' : 'Pending',
    hostIP,
    hostIPs: [{ ip: hostIP }],
    podIP: hostIP,
    podIPs: [{ ip: hostIP }],
    startTime: pod.status?.startTime ?? t,
    qosClass: containers.some((x: any) => x.resources?.requests || x.resources?.limits) ? 'Burstable' : 'BestEffort',
    conditions: [
      cond('PodReadyToStartContainers', true),
      cond('Initialized', true),
      cond('Ready', ready),
      cond('ContainersReady', ready),
      cond('PodScheduled', true),
    ],
    containerStatuses: containers.map((c: any) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      ...(ready ? { containerID: `containerd://${pod.metadata.uid.replaceAll('-', '')}` } : {}),
      ready,
      started: ready,
      restartCount: 0,
      state: ready ? { running: { startedAt: t } } : { waiting },
      lastState: {},
    })),
  };
}

/** One round of the controller (on the leader only). `boundAt` remembers when this leader first saw each pod bound. */
export async function deploymentRound(ctx: AddonContext, boundAt: Map<string, number>, now = Date.now()): Promise<void> {
  const every = (await ctx.store.list(DEPLOYMENTS)).items;
  const deployments = every.filter((d) => !ownedElsewhere(d));
  const nodes = (await ctx.store.list(NODES)).items;
  const allPods = (await ctx.store.list(PODS)).items;
  const names = new Set(nodes.map((n) => n.metadata.name));
  const uids = new Set(every.map((d) => d.metadata.uid));
  const remove = (p: any) => ctx.store.delete(PODS, p.metadata.namespace, p.metadata.name).catch(() => undefined);
  // Garbage collection: a pod of a twin ReplicaSet (its owner carries a Deployment's uid) whose Deployment is gone.
  for (const p of allPods) {
    const owner = (p.metadata?.ownerReferences ?? []).find((o: any) => o.controller && o.kind === 'ReplicaSet');
    if (owner && p.metadata.namespace !== 'flux-system' && !uids.has(owner.uid) && (await isTwinReplicaSetPod(ctx, p, owner))) await remove(p);
  }
  const live = new Set<string>();
  for (const d of deployments) {
    const hash = podTemplateHash(d.spec?.template);
    let pods = podsOf(d, allPods);
    // Pod GC: bound to a Node that no longer exists.
    for (const p of pods.filter((x) => x.spec?.nodeName && !names.has(x.spec.nodeName))) await remove(p);
    pods = pods.filter((x) => !x.spec?.nodeName || names.has(x.spec.nodeName));
    const plan = rolloutPlan(d, pods, hash);
    for (const p of plan.remove) await remove(p);
    pods = pods.filter((p) => !plan.remove.includes(p));
    const fit = schedulableNodes(nodes, d.spec?.template?.spec);
    for (let i = 0; i < plan.create; i++) {
      const node = pickNode(fit, pods);
      if (!node) break;
      const pod = podFor(d, hash, 0, node);
      pod.metadata.name = newPodName(d, hash);
      const created = await ctx.store.create(PODS, d.metadata.namespace, pod).catch((e) => {
        if (e instanceof ApiError) return undefined;
        throw e;
      });
      if (created) pods.push(created);
    }
    for (const p of pods) {
      live.add(p.metadata.uid);
      await standInKubelet(ctx, p, nodes, boundAt, now);
    }
    const status = deploymentStatus(d, pods, hash);
    const sig = (s: any) => JSON.stringify({ ...s, conditions: (s?.conditions ?? []).map((c: any) => [c.type, c.status, c.reason, c.message]) });
    if (sig(d.status ?? {}) !== sig(status))
      await ctx.store
        .update(DEPLOYMENTS, d.metadata.namespace, d.metadata.name, { status }, { onlyStatus: true, expectedRV: d.metadata.resourceVersion })
        .catch(() => undefined);
  }
  for (const uid of boundAt.keys()) if (!live.has(uid)) boundAt.delete(uid);
}

/** A pod the twin's Deployment controller made: its ReplicaSet is named `<deploy>-<pod-template-hash>` and is not a stored object. */
async function isTwinReplicaSetPod(ctx: AddonContext, pod: any, owner: any): Promise<boolean> {
  const hash = pod.metadata.labels?.['pod-template-hash'];
  if (!hash || !owner.name.endsWith(`-${hash}`)) return false;
  return !(await ctx.store.tryGet(REPLICASETS, pod.metadata.namespace, owner.name));
}

/** Marks a bound pod running (or waiting for its image) once it has been bound a second and its node is Ready. */
async function standInKubelet(ctx: AddonContext, pod: any, nodes: any[], boundAt: Map<string, number>, now: number): Promise<void> {
  if (podAvailable(pod) || !pod.spec?.nodeName) return;
  const since = boundAt.get(pod.metadata.uid) ?? now;
  boundAt.set(pod.metadata.uid, since);
  if (now - since < START_DELAY_MS) return;
  const node = nodes.find((n) => n.metadata.name === pod.spec.nodeName);
  if (!(node?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True')) return;
  const hostIP = (node.status?.addresses ?? []).find((a: any) => a.type === 'InternalIP')?.address ?? '';
  const missing = (pod.spec.containers ?? []).map((c: any) => c.image).find((img: string) => ctx.images && !ctx.images.has(img));
  const waiting = missing ? { reason: 'ErrImagePull', message: ctx.images!.pullError(missing) } : undefined;
  if (waiting && pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImagePull') return;
  await ctx.store
    .update(PODS, pod.metadata.namespace, pod.metadata.name, { status: runningStatus(pod, hostIP, waiting) }, { onlyStatus: true })
    .catch(() => undefined);
}
