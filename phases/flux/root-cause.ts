// Why Flux is not Ready, as the operator needs it: not "12 Kustomizations not Ready" but the ROOT — the
// source that cannot be fetched, or the first Kustomization down a dependsOn chain that fails for its own
// reason. Pure: the GitRepository and Kustomization objects as the API returns them (JSON) in, verdicts out.
import type { CauseId } from '../../src/causes/catalogue.ts';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface FluxObject {
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: {
    dependsOn?: { name: string; namespace?: string }[];
    sourceRef?: { kind?: string; name: string; namespace?: string };
  };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

export interface FluxVerdict {
  causeId: CauseId;
  /** The object the verdict names: `Kustomization flux-system/platform`. */
  object: string;
  reason: string;
  message: string;
  /** Waiting cannot help: the object reported this failure for its current generation. */
  final: boolean;
  /** For FLUX_DEPENDENCY_NOT_READY: the Kustomizations that wait on the root. */
  waiting?: string[];
}

export type FluxState = { ready: true } | { ready: false; verdicts: FluxVerdict[] };

/** Reasons of a Ready=False that mean "still working", not "failed". */
const PENDING_REASONS = new Set(['Progressing', 'ProgressingWithRetry', 'DependencyNotReady', 'ArtifactFailed', 'Reconciling']);

const key = (o: FluxObject) => `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
export const describeObject = (kind: string, o: { metadata: { name: string; namespace?: string } }) => `${kind} ${key(o as FluxObject)}`;

export function readyCondition(o: FluxObject): Condition | undefined {
  return o.status?.conditions?.find((c) => c.type === 'Ready');
}

export function isReady(o: FluxObject): boolean {
  const c = readyCondition(o);
  // A Ready of an older generation says nothing about the spec now applied.
  return c?.status === 'True' && (o.status?.observedGeneration ?? 0) >= (o.metadata.generation ?? 0);
}

/** Failed for the current generation with a reason that is not "still working". */
function failedForGood(o: FluxObject): boolean {
  const c = readyCondition(o);
  if (c?.status !== 'False' || PENDING_REASONS.has(c.reason ?? '')) return false;
  return (o.status?.observedGeneration ?? 0) >= (o.metadata.generation ?? 0);
}

/** The verdict for a GitRepository that is not Ready. */
export function sourceVerdict(src: FluxObject): FluxVerdict {
  const c = readyCondition(src);
  return {
    causeId: 'FLUX_SOURCE_NOT_READY',
    object: describeObject('GitRepository', src),
    reason: c?.reason ?? 'NoReadyCondition',
    message: c?.message ?? 'the source-controller has not reconciled it yet',
    final: failedForGood(src),
  };
}

const STRICT_VARIABLE = /variable not set|strict mode/i;
const NO_MATCHES = /no matches for kind/i;

/** The cause of a Kustomization that fails for its own reason (not a dependency's). */
export function classifyKustomization(k: FluxObject): FluxVerdict {
  const c = readyCondition(k);
  const reason = c?.reason ?? 'NoReadyCondition';
  const message = c?.message ?? 'the kustomize-controller has not reconciled it yet';
  const base = { object: describeObject('Kustomization', k), reason, message, final: failedForGood(k) };
  if (c?.status !== 'False') return { ...base, causeId: 'FLUX_RECONCILIATION_FAILED' };
  if (STRICT_VARIABLE.test(message)) return { ...base, causeId: 'FLUX_SUBSTITUTION_FAILED' };
  if (NO_MATCHES.test(message)) return { ...base, causeId: 'FLUX_CRD_NOT_INSTALLED' };
  if (reason === 'HealthCheckFailed') return { ...base, causeId: 'FLUX_HEALTHCHECK_FAILED' };
  if (reason === 'BuildFailed') return { ...base, causeId: 'FLUX_BUILD_FAILED' };
  return { ...base, causeId: 'FLUX_RECONCILIATION_FAILED' };
}

/**
 * Follows dependsOn from `k` to the first Kustomization that is not Ready for its own reason. A missing
 * dependency is a root of its own (returned as a name). Cycles end where they close.
 */
export function rootOf(k: FluxObject, byKey: Map<string, FluxObject>, seen = new Set<string>()): FluxObject | { missing: string } {
  seen.add(key(k));
  if (readyCondition(k)?.reason !== 'DependencyNotReady') return k;
  for (const d of k.spec?.dependsOn ?? []) {
    const dk = `${d.namespace ?? k.metadata.namespace ?? 'default'}/${d.name}`;
    const dep = byKey.get(dk);
    if (!dep) return { missing: dk };
    if (isReady(dep) || seen.has(dk)) continue;
    return rootOf(dep, byKey, seen);
  }
  // Every dependency is Ready now: the controller has not retried yet.
  return k;
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
  const roots = new Map<string, { verdict: FluxVerdict; waiting: string[] }>();
  for (const k of kustomizations) {
    if (isReady(k)) continue;
    // A Kustomization whose source cannot be fetched is explained by the source's verdict.
    const ref = k.spec?.sourceRef;
    if (ref && badSources.has(`${ref.namespace ?? k.metadata.namespace ?? 'default'}/${ref.name}`)) continue;
    const root = rootOf(k, byKey);
    const rootKey = 'missing' in root ? root.missing : key(root);
    if (!roots.has(rootKey)) {
      const verdict: FluxVerdict =
        'missing' in root
          ? { causeId: 'FLUX_DEPENDENCY_NOT_READY', object: `Kustomization ${root.missing}`, reason: 'DependencyNotFound', message: `Kustomization ${root.missing} does not exist, and ${describeObject('Kustomization', k)} depends on it`, final: true }
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
        final: verdict.final,
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
