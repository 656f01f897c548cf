// A PodDisruptionBudget's status as kube-controller-manager's disruption controller computes it, and the
// DisruptionAllowed condition both it and the eviction subresource keep. Upstream (kubernetes/kubernetes,
// tag unverified, read from a copy carrying v1.32's eviction options): pkg/controller/disruption/
// disruption.go (trySync, getExpectedPodCount, getExpectedScale, countHealthyPods, buildDisruptedPodMap,
// updatePdbStatus, failSafe; DeletionTimeout = 2 * time.Minute), staging/src/k8s.io/component-helpers/apps/
// poddisruptionbudget/helpers.go (UpdateDisruptionAllowedCondition), staging/src/k8s.io/api/policy/v1/
// types.go (DisruptionAllowed, SufficientPods, InsufficientPods, SyncFailed).
import { labelSelectorMatches } from './label-selector.ts';

/** disruption.go DeletionTimeout: how long an eviction's entry in disruptedPods keeps the pod out of currentHealthy. */
const DELETION_TIMEOUT_MS = 2 * 60_000;

interface PdbCondition {
  type: string;
  status: 'True' | 'False';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

const iso = (d: Date) => d.toISOString().replace(/\.\d+Z$/, 'Z');

/** apimeta.SetStatusCondition: the transition time moves only when the status changes. */
function setCondition(list: PdbCondition[] | undefined, c: Omit<PdbCondition, 'lastTransitionTime'>, now: Date): PdbCondition[] {
  const prev = (list ?? []).find((x) => x.type === c.type);
  const next: PdbCondition = {
    type: c.type,
    status: c.status,
    ...(c.observedGeneration ? { observedGeneration: c.observedGeneration } : {}),
    lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : iso(now),
    reason: c.reason,
    message: c.message,
  };
  return [...(list ?? []).filter((x) => x.type !== c.type), next];
}

/** UpdateDisruptionAllowedCondition: True SufficientPods while disruptions are allowed, else False InsufficientPods; no message. */
export function withDisruptionAllowed(status: any, now = new Date()): any {
  const ok = Number(status.disruptionsAllowed ?? 0) > 0;
  return {
    ...status,
    conditions: setCondition(
      status.conditions,
      {
        type: 'DisruptionAllowed',
        status: ok ? 'True' : 'False',
        observedGeneration: status.observedGeneration,
        reason: ok ? 'SufficientPods' : 'InsufficientPods',
        message: '',
      },
      now,
    ),
  };
}

/** The pods a budget selects: its namespace, its selector (policy/v1: an empty selector selects every pod there). */
export const podsOfBudget = (pdb: any, pods: any[]) =>
  pods.filter((p) => p.metadata?.namespace === pdb.metadata.namespace && labelSelectorMatches(pdb.spec?.selector, p.metadata?.labels));

export const podReady = (p: any) => (p?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

/** intstr.GetScaledValueFromIntOrPercent with roundUp: `n` or `p%` of `total`. */
function scaled(v: unknown, total: number): number {
  if (typeof v === 'string' && v.endsWith('%')) return Math.ceil((Number(v.slice(0, -1)) * total) / 100);
  return Number(v);
}

/** The controller of a pod's owner reference and its scale (spec.replicas), or undefined when none is found. */
export type ScaleOf = (owner: any, namespace: string) => { uid: string; scale: number } | undefined;

/** getExpectedScale: the summed scale of the selected pods' controllers; pods without one are skipped (unmanaged). */
function expectedScale(pods: any[], scaleOf: ScaleOf): number {
  const seen = new Map<string, number>();
  for (const p of pods) {
    const ref = (p.metadata?.ownerReferences ?? []).find((o: any) => o.controller);
    if (!ref || seen.has(ref.uid)) continue;
    const c = scaleOf(ref, p.metadata.namespace);
    if (!c) throw new Error(`found no controllers for pod "${p.metadata.name}"`);
    seen.set(c.uid, c.scale);
  }
  return [...seen.values()].reduce((a, b) => a + b, 0);
}

/** getExpectedPodCount: expectedPods and desiredHealthy from maxUnavailable or minAvailable. */
function expectedAndDesired(pdb: any, pods: any[], scaleOf: ScaleOf): { expected: number; desired: number } {
  const spec = pdb.spec ?? {};
  if (spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
    const expected = expectedScale(pods, scaleOf);
    return { expected, desired: Math.max(0, expected - scaled(spec.maxUnavailable, expected)) };
  }
  if (typeof spec.minAvailable === 'number') return { expected: pods.length, desired: spec.minAvailable };
  if (typeof spec.minAvailable === 'string') {
    const expected = expectedScale(pods, scaleOf);
    return { expected, desired: scaled(spec.minAvailable, expected) };
  }
  return { expected: 0, desired: 0 };
}

/**
 * The budget's status for the pods of its namespace (trySync → updatePdbStatus): disruptedPods keeps the
 * evictions of pods that still exist, are not being deleted and were approved less than 2 minutes ago;
 * those pods and deleting ones do not count as healthy; disruptionsAllowed is currentHealthy −
 * desiredHealthy, and 0 while no pod is expected. A controller that cannot be found fails the sync:
 * failSafe sets disruptionsAllowed 0 and DisruptionAllowed False `SyncFailed` with the error.
 */
export function budgetStatus(pdb: any, namespacePods: any[], scaleOf: ScaleOf, now = new Date()): any {
  const pods = podsOfBudget(pdb, namespacePods);
  const generation = pdb.metadata?.generation ?? 1;
  let counts: { expected: number; desired: number };
  try {
    counts = expectedAndDesired(pdb, pods, scaleOf);
  } catch (e) {
    const old = pdb.status ?? {};
    return {
      ...old,
      disruptionsAllowed: 0,
      conditions: setCondition(
        old.conditions,
        { type: 'DisruptionAllowed', status: 'False', observedGeneration: old.observedGeneration, reason: 'SyncFailed', message: (e as Error).message },
        now,
      ),
    };
  }
  const disrupted: Record<string, string> = {};
  const old: Record<string, string> = pdb.status?.disruptedPods ?? {};
  for (const p of pods) {
    const at = old[p.metadata.name];
    if (p.metadata.deletionTimestamp || at === undefined) continue;
    if (Date.parse(at) + DELETION_TIMEOUT_MS > now.getTime()) disrupted[p.metadata.name] = at;
  }
  const currentHealthy = pods.filter((p) => !p.metadata.deletionTimestamp && disrupted[p.metadata.name] === undefined && podReady(p)).length;
  const allowed = currentHealthy - counts.desired;
  return withDisruptionAllowed(
    {
      observedGeneration: generation,
      ...(Object.keys(disrupted).length ? { disruptedPods: disrupted } : {}),
      disruptionsAllowed: counts.expected <= 0 || allowed <= 0 ? 0 : allowed,
      currentHealthy,
      desiredHealthy: counts.desired,
      expectedPods: counts.expected,
      conditions: pdb.status?.conditions,
    },
    now,
  );
}
