// kube-controller-manager's Deployment controller, its pure parts: the pod-template-hash and the names of a
// Deployment's ReplicaSet and pods, which pods are the Deployment's, how many pods a rollout creates and
// which it removes under Recreate and RollingUpdate (kubernetes/kubernetes pkg/controller/deployment/
// rolling.go reconcileNewReplicaSet, reconcileOldReplicaSets, cleanupUnhealthyReplicas; recreate.go;
// util/deployment_util.go MaxSurge, MaxUnavailable, ResolveFenceposts), and the Deployment's status with
// Available and Progressing in its words (sync.go calculateStatus; progress.go syncRolloutStatus). Used by
// the Flux controllers' pods (./flux/pods.ts) and the Deployment controller for every other workload
// (./deployments.ts).
import { createHash } from 'node:crypto';
export const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789'; // apimachinery's utilrand alphanums, as SafeEncodeString uses them
const encode = (bytes: Buffer, n: number) => [...bytes.subarray(0, n)].map((b) => ALPHABET[b % ALPHABET.length]).join('');

/** `pod-template-hash`: a hash of the pod template in apimachinery's safe alphabet (upstream: fnv32a, SafeEncodeString). */
export const podTemplateHash = (template: unknown) =>
  encode(
    createHash('sha256')
      .update(JSON.stringify(template ?? {}))
      .digest(),
    10,
  );

/** The ReplicaSet a template of a Deployment belongs to: `<deploy>-<pod-template-hash>` (sync.go getNewReplicaSet). */
export const replicaSetName = (d: any, hash: string) => `${d.metadata.name}-${hash}`;

/** A pod's name: its ReplicaSet's name and five characters, the same on every server for one Deployment generation. */
export const podName = (d: any, hash: string, slot: number) =>
  `${replicaSetName(d, hash)}-${encode(
    createHash('sha256')
      .update(`${d.metadata.uid}/${hash}/${d.metadata.generation ?? 1}/${slot}`)
      .digest(),
    5,
  )}`;

export const condition = (p: any, type: string) => (p?.status?.conditions ?? []).find((c: any) => c.type === type);
/** Available: Ready (the Deployments here have no minReadySeconds). */
export const podAvailable = (p: any) => condition(p, 'Ready')?.status === 'True';

/** The Deployment's pods: in its namespace, matching its selector, controlled by one of its ReplicaSets (by name), not deleting. */
export function podsOf(d: any, pods: any[]): any[] {
  const match = d.spec?.selector?.matchLabels ?? {};
  return pods.filter((p) => {
    if (p.metadata?.namespace !== d.metadata.namespace || p.metadata?.deletionTimestamp) return false;
    if (!Object.entries(match).every(([k, v]) => p.metadata?.labels?.[k] === v)) return false;
    const owner = (p.metadata?.ownerReferences ?? []).find((o: any) => o.controller && o.kind === 'ReplicaSet');
    return owner?.name === replicaSetName(d, p.metadata?.labels?.['pod-template-hash'] ?? '');
  });
}

/** maxSurge and maxUnavailable as pod counts: surge rounds up, unavailable down, and not both 0 (ResolveFenceposts); 0 and 0 for Recreate. */
export function fenceposts(d: any): { surge: number; unavailable: number } {
  const replicas = Number(d.spec?.replicas ?? 1);
  if ((d.spec?.strategy?.type ?? 'RollingUpdate') !== 'RollingUpdate') return { surge: 0, unavailable: 0 };
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  const scaled = (v: unknown, up: boolean) => {
    if (typeof v === 'string' && v.endsWith('%')) {
      const x = (Number(v.slice(0, -1)) * replicas) / 100;
      return up ? Math.ceil(x) : Math.floor(x);
    }
    return Number(v);
  };
  const surge = scaled(ru.maxSurge ?? '25%', true);
  let unavailable = scaled(ru.maxUnavailable ?? '25%', false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable: Math.min(unavailable, replicas) };
}

/** What the Deployment controller does this round: how many pods of the current template to create, and which pods to remove. */
export function rolloutPlan(d: any, pods: any[], hash: string): { create: number; remove: any[] } {
  const replicas = Number(d.spec?.replicas ?? 1);
  const current = pods.filter((p) => p.metadata.labels?.['pod-template-hash'] === hash);
  const old = pods.filter((p) => !current.includes(p));
  const remove: any[] = current.slice(replicas);
  if ((d.spec?.strategy?.type ?? 'RollingUpdate') === 'Recreate') {
    // recreate.go: scale the old ReplicaSets down and wait until their pods are gone, then scale the new one up.
    if (old.length) return { create: 0, remove: [...old, ...remove] };
    return { create: Math.max(0, replicas - current.length), remove };
  }
  const { surge, unavailable } = fenceposts(d);
  const minAvailable = replicas - unavailable;
  const create = Math.max(0, Math.min(replicas - current.length, replicas + surge - pods.length));
  // cleanupUnhealthyReplicas: old pods that are not available go first, as far as the minimum availability allows.
  let all = pods.length - remove.length;
  let maxDown = all - minAvailable - current.filter((p) => !podAvailable(p)).length;
  for (const p of old.filter((x) => !podAvailable(x))) {
    if (maxDown <= 0) break;
    remove.push(p);
    maxDown--;
    all--;
  }
  // scaleDownOldReplicaSetsForRollingUpdate: then available old pods, while the available ones stay above the minimum.
  let down = pods.filter((p) => !remove.includes(p) && podAvailable(p)).length - minAvailable;
  for (const p of old.filter((x) => podAvailable(x))) {
    if (down <= 0) break;
    remove.push(p);
    down--;
  }
  return { create, remove };
}

interface DeploymentCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
}

/** The Deployment's status for these pods (sync.go calculateStatus, progress.go syncRolloutStatus). */
export function deploymentStatus(d: any, pods: any[], hash: string, now = new Date()): any {
  const replicas = Number(d.spec?.replicas ?? 1);
  const current = pods.filter((p) => p.metadata.labels?.['pod-template-hash'] === hash);
  const available = pods.filter(podAvailable).length;
  const ready = pods.filter((p) => condition(p, 'Ready')?.status === 'True').length;
  const t = now.toISOString().replace(/\.\d+Z$/, 'Z');
  const prev: DeploymentCondition[] = d.status?.conditions ?? [];
  const set = (c: Omit<DeploymentCondition, 'lastUpdateTime' | 'lastTransitionTime'>, progressed = false): DeploymentCondition => {
    const p = prev.find((x) => x.type === c.type);
    // SetDeploymentCondition: nothing changes when status and reason are the same; Progressing's lastUpdateTime moves on progress.
    if (p && p.status === c.status && p.reason === c.reason) return { ...p, message: c.message, lastUpdateTime: progressed ? t : p.lastUpdateTime };
    return { ...c, lastUpdateTime: t, lastTransitionTime: p && p.status === c.status ? p.lastTransitionTime : t };
  };
  const rs = replicaSetName(d, hash);
  const minAvailable = replicas - fenceposts(d).unavailable;
  const availableCond =
    available >= minAvailable
      ? set({ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' })
      : set({ type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' });
  const complete = current.length === replicas && pods.length === replicas && available === replicas;
  const old = d.status ?? {};
  const progressed =
    current.length !== old.updatedReplicas || ready !== old.readyReplicas || available !== old.availableReplicas || pods.length !== old.replicas;
  const prog = prev.find((x) => x.type === 'Progressing');
  const deadlineMs = Number(d.spec?.progressDeadlineSeconds ?? 600) * 1000;
  let progressing: DeploymentCondition;
  if (complete)
    progressing = set(
      { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${rs}" has successfully progressed.` },
      progressed,
    );
  else if (!progressed && prog?.reason === 'ReplicaSetUpdated' && now.getTime() - Date.parse(prog.lastUpdateTime) > deadlineMs)
    progressing = set({ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${rs}" has timed out progressing.` });
  else if (prog?.reason === 'ProgressDeadlineExceeded' && !progressed) progressing = prog;
  else progressing = set({ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: `ReplicaSet "${rs}" is progressing.` }, true);
  return {
    observedGeneration: d.metadata.generation ?? 1,
    replicas: pods.length,
    updatedReplicas: current.length,
    readyReplicas: ready,
    availableReplicas: available,
    unavailableReplicas: Math.max(0, Math.max(replicas, pods.length) - available),
    conditions: [availableCond, progressing],
  };
}

/** The pod the ReplicaSet of this template creates, bound to `node`. */
export function podFor(d: any, hash: string, slot: number, node: string): any {
  const t = d.spec?.template ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(d, hash, slot),
      namespace: d.metadata.namespace,
      labels: { ...(t.metadata?.labels ?? {}), 'pod-template-hash': hash },
      annotations: t.metadata?.annotations ?? {},
      // The ReplicaSet object itself is not imitated; its name and the Deployment's uid stand for it.
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSetName(d, hash), uid: d.metadata.uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: { ...(t.spec ?? {}), nodeName: node },
    status: { phase: 'Pending' },
  };
}
