// Why Flux is not Ready, as the operator needs it: not "12 Kustomizations not Ready" but the ROOT — the
// source that cannot be fetched, or the first Kustomization down a dependsOn chain that fails for its own
// reason. Pure: the GitRepository and Kustomization objects as the API returns them (JSON) in, verdicts out.
//
// Upstream's status bookkeeping decides what "now" means. Flux writes status.observedGeneration only when
// an object ends Ready or Stalled (fluxcd/pkg runtime/reconcile AddPatchOptions; kustomize-controller
// finalizeStatus; helm-controller's deferred patch), and status.lastHandledReconcileAt after every attempt.
// So a failure of a new generation never looks "current" by observedGeneration: the only early stop is
// Stalled (terminal: the controller will not retry this generation); any other failure may still clear (a
// dependency becomes Ready, the next retry), so it is waited on and named when the budget ends.
import type { CauseId } from '../../src/causes/catalogue.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface FluxObject {
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: {
    dependsOn?: { name: string; namespace?: string }[];
    sourceRef?: { kind?: string; name: string; namespace?: string };
  };
  status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    lastHandledReconcileAt?: string;
    /** A source's: what it fetched last. */
    artifact?: { revision?: string };
    /** A Kustomization's: the source revision it tried last (set once the path exists). */
    lastAttemptedRevision?: string;
    /** A Kustomization's: the source revision it applied last, with its health checks passed. */
    lastAppliedRevision?: string;
    /** A Kustomization's: what it applied last (health checks read it). */
    inventory?: { entries?: { id: string; v: string }[] };
  };
}

export interface FluxVerdict {
  causeId: CauseId;
  /** The object the verdict names: `Kustomization flux-system/platform`. */
  object: string;
  reason: string;
  message: string;
  /** Stalled=True for the current generation: the controller will not retry, waiting cannot help. */
  stalled: boolean;
  /** For FLUX_DEPENDENCY_NOT_READY: the Kustomizations that wait on the root. */
  waiting?: string[];
}

export type FluxState = { ready: true } | { ready: false; verdicts: FluxVerdict[] };

const key = (o: FluxObject) => `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
export const describeObject = (kind: string, o: { metadata: { name: string; namespace?: string } }) => `${kind} ${key(o as FluxObject)}`;

export function readyCondition(o: FluxObject): Condition | undefined {
  return o.status?.conditions?.find((c) => c.type === 'Ready');
}

/** The annotation `flux reconcile` sets; the controller copies it to status.lastHandledReconcileAt when done. */
export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

/**
 * The status speaks of the object as it is now: its generation observed, a reconcile request handled,
 * and (for a Kustomization, when its source is known) the source's current revision attempted.
 */
function current(o: FluxObject, sourceRevision?: string): boolean {
  if ((o.status?.observedGeneration ?? 0) < (o.metadata.generation ?? 0)) return false;
  if (!answered(o)) return false;
  return sourceRevision === undefined || o.status?.lastAttemptedRevision === undefined || o.status.lastAttemptedRevision === sourceRevision;
}

/** The controller finished an attempt after the reconcile request (written on failure too). */
function answered(o: FluxObject): boolean {
  const req = o.metadata.annotations?.[REQUESTED_AT];
  return req === undefined || o.status?.lastHandledReconcileAt === req;
}

const conditionOf = (o: FluxObject, type: string) => o.status?.conditions?.find((c) => c.type === type);

/**
 * Stalled=True (and not Reconciling, as fluxcd/pkg conditions.IsStalled) for the current generation:
 * upstream writes observedGeneration with it, so an older Stalled says nothing about this spec.
 */
export function stalledCondition(o: FluxObject): Condition | undefined {
  const s = conditionOf(o, 'Stalled');
  if (s?.status !== 'True' || conditionOf(o, 'Reconciling')?.status === 'True') return undefined;
  return (o.status?.observedGeneration ?? 0) >= (o.metadata.generation ?? 0) && answered(o) ? s : undefined;
}

/** A Ready=False message, as the verdict carries it: why it stops (Stalled), or that it is not an answer yet. */
function failureMessage(o: FluxObject, message: string): string {
  const s = stalledCondition(o);
  if (s) return `${message} (Stalled: ${s.reason}: ${s.message}; the controller will not retry this generation)`;
  return answered(o) ? message : `${message} (written before this run's reconcile request, which the controller has not answered yet)`;
}

/** Reconciling's message while kustomize-controller runs the health checks (checkHealth). */
const HEALTH_RUNNING = /^Running health checks for revision /;

/** The health checks of this Kustomization's attempt are still running (Ready Unknown, Healthy Unknown). */
function healthChecking(k: FluxObject): Condition | undefined {
  const h = conditionOf(k, 'Healthy');
  const r = conditionOf(k, 'Reconciling');
  if (readyCondition(k)?.status !== 'Unknown' || h?.status !== 'Unknown' || r?.status !== 'True' || !HEALTH_RUNNING.test(r.message ?? '')) return undefined;
  return r;
}

export function isReady(o: FluxObject, sourceRevision?: string): boolean {
  // A Ready of an older generation (or from before a reconcile request) says nothing about now.
  return readyCondition(o)?.status === 'True' && current(o, sourceRevision);
}

/** A Kustomization's path that is not in the source: reported as ArtifactFailed, a build problem. */
const PATH_NOT_FOUND = /kustomization path not found/i;

/** The verdict for a GitRepository that is not Ready. */
function sourceVerdict(src: FluxObject): FluxVerdict {
  const c = readyCondition(src);
  return {
    causeId: 'FLUX_SOURCE_NOT_READY',
    object: describeObject('GitRepository', src),
    reason: c?.reason ?? 'NoReadyCondition',
    message: c ? failureMessage(src, c.message ?? '') : 'the source-controller has not reconciled it yet',
    stalled: stalledCondition(src) !== undefined,
  };
}

const STRICT_VARIABLE = /variable not set|strict mode/i;
const NO_MATCHES = /no matches for kind/i;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { HEALTH_RUNNING, PATH_NOT_FOUND, STRICT_VARIABLE, NO_MATCHES };

/** The cause of a Kustomization that fails for its own reason (not a dependency's). */
export function classifyKustomization(k: FluxObject): FluxVerdict {
  const c = readyCondition(k);
  const reason = c?.reason ?? 'NoReadyCondition';
  const message = c?.message ?? 'the kustomize-controller has not reconciled it yet';
  const base = { object: describeObject('Kustomization', k), reason, message, stalled: stalledCondition(k) !== undefined };
  const running = healthChecking(k);
  if (running)
    return {
      ...base,
      causeId: 'FLUX_HEALTHCHECK_FAILED',
      reason: 'HealthCheckRunning',
      message: `the health checks had not ended when the budget ran out (${running.message})`,
    };
  if (c?.status !== 'False')
    return {
      ...base,
      causeId: 'FLUX_RECONCILIATION_FAILED',
      message: c?.status === 'True' ? `${message} (not yet of the current generation, reconcile request or source revision)` : message,
    };
  base.message = failureMessage(k, message);
  if (STRICT_VARIABLE.test(message)) return { ...base, causeId: 'FLUX_SUBSTITUTION_FAILED' };
  if (NO_MATCHES.test(message)) return { ...base, causeId: 'FLUX_CRD_NOT_INSTALLED' };
  if (reason === 'HealthCheckFailed') return { ...base, causeId: 'FLUX_HEALTHCHECK_FAILED' };
  if (reason === 'BuildFailed' || PATH_NOT_FOUND.test(message)) return { ...base, causeId: 'FLUX_BUILD_FAILED' };
  return { ...base, causeId: 'FLUX_RECONCILIATION_FAILED' };
}

/**
 * Follows dependsOn from `k` to the first Kustomization that is not Ready for its own reason. A missing
 * dependency is a root of its own (returned as a name). Cycles end where they close.
 */
export function rootOf(
  k: FluxObject,
  byKey: Map<string, FluxObject>,
  seen = new Set<string>(),
  revisionOf: (k: FluxObject) => string | undefined = () => undefined,
): FluxObject | { missing: string } {
  seen.add(key(k));
  if (readyCondition(k)?.reason !== 'DependencyNotReady') return k;
  for (const d of k.spec?.dependsOn ?? []) {
    const dk = `${d.namespace ?? k.metadata.namespace ?? 'default'}/${d.name}`;
    const dep = byKey.get(dk);
    if (!dep) return { missing: dk };
    if (isReady(dep, revisionOf(dep)) || seen.has(dk)) continue;
    return rootOf(dep, byKey, seen, revisionOf);
  }
  // Every dependency is Ready now: the controller has not retried yet.
  return k;
}

/** The key of a Kustomization's source (`namespace/name`), '' without a sourceRef. */
const sourceKey = (k: FluxObject) => (k.spec?.sourceRef ? `${k.spec.sourceRef.namespace ?? k.metadata.namespace ?? 'default'}/${k.spec.sourceRef.name}` : '');

/**
 * Flux has nothing left to do for what its sources hold: every GitRepository Ready for its current generation
 * with an artifact, every Kustomization Ready for its current generation with its source's artifact revision
 * applied, and no reconcile request of an earlier run left unanswered. This is kustomize-controller's own test of
 * a dependency that is ready (fluxcd/kustomize-controller v1.9.0, internal/controller/kustomization_controller.go,
 * checkDependencies: `dep.Generation != dep.Status.ObservedGeneration` is not ready, Ready must be True, and
 * the source's artifact must have `dep.Status.LastAppliedRevision`). The fields, same tag:
 * - Kustomization status.lastAppliedRevision, "the last successfully applied revision. Equals the Revision of
 *   the applied Artifact from the referenced Source" (api/v1/kustomization_types.go), written with Ready=True
 *   only once the apply and its health checks passed (kustomization_controller.go, reconcile);
 * - status.observedGeneration, written when Ready is True (finalizeStatus) or with Stalled, beside
 *   status.lastHandledReconcileAt, the value of the reconcile.fluxcd.io/requestedAt annotation it handled
 *   (fluxcd/pkg apis/meta ReconcileRequestStatus);
 * - GitRepository status.artifact, "the last successful GitRepository reconciliation", and observedGeneration,
 *   "the last observed generation" (fluxcd/source-controller v1.9.0, api/v1/gitrepository_types.go).
 * What none of them can say is whether the branch has moved since the source's last fetch (spec.interval,
 * 1m here): only a fetch tells, so the wait asks the sources for one whatever this says, unless the source
 * already serves the checkout's commit (servesRevision, ready-wait.ts).
 */
export function upToDate(sources: FluxObject[], kustomizations: FluxObject[]): boolean {
  if (!sources.length || !kustomizations.length) return false;
  const settled = (o: FluxObject) =>
    readyCondition(o)?.status === 'True' && o.metadata.generation !== undefined && o.status?.observedGeneration === o.metadata.generation && answered(o);
  const revisions = new Map(sources.map((s) => [key(s), s.status?.artifact?.revision]));
  return (
    sources.every((s) => settled(s) && s.status?.artifact?.revision) &&
    kustomizations.every((k) => {
      const revision = k.spec?.sourceRef?.kind === 'GitRepository' ? revisions.get(sourceKey(k)) : undefined;
      return settled(k) && revision !== undefined && k.status?.lastAppliedRevision === revision;
    })
  );
}

/**
 * Flux has nothing left to do for `revision`: the GitRepository `source` serves it (status.artifact.revision,
 * in source-controller's format: checkout-revision.ts) and everything is upToDate. A converged run proves
 * this without asking any controller for anything (ready-wait.ts).
 */
export function servesRevision(sources: FluxObject[], kustomizations: FluxObject[], source: { name: string; namespace: string }, revision: string): boolean {
  const s = sources.find((x) => key(x) === `${source.namespace}/${source.name}`);
  return s?.status?.artifact?.revision === revision && upToDate(sources, kustomizations);
}

/** The labels kustomize-controller puts on every object it applies (fluxcd/kustomize-controller v1.9.0, internal/controller/kustomization_controller.go: SetOwnerLabels, with its owner group). */
const APPLIER_NAME = 'kustomize.toolkit.fluxcd.io/name';
const APPLIER_NAMESPACE = 'kustomize.toolkit.fluxcd.io/namespace';

/**
 * The Kustomizations whose applier (the Kustomization that applied them, by its labels) has not yet
 * answered this run's request at its source's current revision. Until it has, a Stalled one among them may
 * be about to be pruned (removed from git in the revision just pushed), so its Stalled is not yet the
 * answer: the wait goes on until the applier has applied (and pruned) or the budget ends.
 */
export function awaitingApplier(sources: FluxObject[], kustomizations: FluxObject[]): Set<string> {
  const byKey = new Map(kustomizations.map((k) => [key(k), k]));
  const revisions = new Map(sources.map((s) => [key(s), { revision: s.status?.artifact?.revision, answered: answered(s) }]));
  const out = new Set<string>();
  for (const k of kustomizations) {
    const name = k.metadata.labels?.[APPLIER_NAME];
    const applier = name && byKey.get(`${k.metadata.labels?.[APPLIER_NAMESPACE] ?? 'default'}/${name}`);
    if (!applier || applier === k) continue;
    const source = revisions.get(sourceKey(applier));
    const settled = answered(applier) && source?.answered && source.revision !== undefined && applier.status?.lastAttemptedRevision === source.revision;
    if (!settled) out.add(describeObject('Kustomization', k));
  }
  return out;
}

/** Whether Flux is Ready, and if not, one verdict per root (the root's own cause, and who waits on it). */
export function fluxState(sources: FluxObject[], kustomizations: FluxObject[]): FluxState {
  const verdicts: FluxVerdict[] = [];
  const badSources = new Set<string>();
  for (const s of sources) {
    if (isReady(s)) continue;
    badSources.add(key(s));
    verdicts.push(sourceVerdict(s));
  }
  const byKey = new Map(kustomizations.map((k) => [key(k), k]));
  const revisions = new Map(sources.map((s) => [key(s), s.status?.artifact?.revision]));
  const revisionOf = (k: FluxObject) => revisions.get(sourceKey(k));
  const roots = new Map<string, { verdict: FluxVerdict; waiting: string[] }>();
  for (const k of kustomizations) {
    if (isReady(k, revisionOf(k))) continue;
    // A Kustomization whose source cannot be fetched is explained by the source's verdict.
    if (badSources.has(sourceKey(k))) continue;
    const root = rootOf(k, byKey, new Set(), revisionOf);
    const rootKey = 'missing' in root ? root.missing : key(root);
    if (!roots.has(rootKey)) {
      const verdict: FluxVerdict =
        'missing' in root
          ? {
              causeId: 'FLUX_DEPENDENCY_NOT_READY',
              object: `Kustomization ${root.missing}`,
              reason: 'DependencyNotFound',
              message: `Kustomization ${root.missing} does not exist, and ${describeObject('Kustomization', k)} depends on it`,
              stalled: false,
            }
          : classifyKustomization(root);
      roots.set(rootKey, { verdict, waiting: [] });
    }
    if ('missing' in root || root !== k) roots.get(rootKey)!.waiting.push(describeObject('Kustomization', k));
  }
  for (const { verdict, waiting } of roots.values()) {
    if (verdict.causeId === 'FLUX_DEPENDENCY_NOT_READY') {
      verdicts.push({ ...verdict, waiting });
      continue;
    }
    verdicts.push(verdict);
    // Those waiting are named once, with the root (not the chain between them).
    if (waiting.length) {
      verdicts.push({
        causeId: 'FLUX_DEPENDENCY_NOT_READY',
        object: verdict.object,
        reason: verdict.reason,
        message: `${waiting.join(', ')} ${waiting.length === 1 ? 'waits' : 'wait'} on ${verdict.object}, the root, which is not Ready: ${verdict.reason}: ${verdict.message}`,
        stalled: verdict.stalled,
        waiting,
      });
    }
  }
  return verdicts.length ? { ready: false, verdicts } : { ready: true };
}

/** Every string in `value` that still holds a `${VAR}` (substitution did not run), as dotted paths. */
export function literalVariables(value: unknown, path = ''): { path: string; text: string }[] {
  if (typeof value === 'string') return /\$\{[A-Za-z_][A-Za-z0-9_]*(:?[=-][^}]*)?\}/.test(value) ? [{ path: path || '.', text: value }] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => literalVariables(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => literalVariables(v, path ? `${path}.${k}` : k));
  return [];
}
