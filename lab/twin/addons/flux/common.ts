// What the Flux controller twins share: the kinds they read, the status conditions they write (fluxcd/pkg
// runtime/conditions: Ready plus the reconciling/stalled family, lastTransitionTime kept while a
// condition's status does not change), when an object is due (generation, the
// reconcile.fluxcd.io/requestedAt annotation, the interval — shortened in the twin), and the leader
// election each controller runs on its own Lease in flux-system, as controller-runtime does.
import { randomUUID } from 'node:crypto';
import { BUILTIN, type ResourceInfo } from '../../api/resources.ts';
import { ApiError } from '../../api/status.ts';
import { type AddonContext, nowIso } from '../context.ts';
import { Elector, type LeaseSpec } from '../kube-vip/election.ts';

export const FLUX_NS = 'flux-system';
export const builtin = (r: string) => BUILTIN.find((x) => x.resource === r)!;
export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
/** The twin re-checks every object at least this often, whatever its spec.interval says. */
const TWIN_INTERVAL_MS = 10_000;

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/** The new condition list: `set` replaces conditions of the same type (keeping their transition time when the status is the same), `remove` drops types. */
export function withConditions(old: Condition[] | undefined, set: Condition[], remove: string[] = []): Condition[] {
  const now = nowIso();
  const keep = (old ?? []).filter((c) => !remove.includes(c.type) && !set.some((s) => s.type === c.type));
  const next = set.map((c) => {
    const prev = (old ?? []).find((o) => o.type === c.type);
    return { ...c, lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : now };
  });
  // Ready first, as kstatus-aware printers expect.
  return [...next, ...keep].sort((a, b) => (a.type === 'Ready' ? -1 : b.type === 'Ready' ? 1 : 0));
}

export const readyOf = (obj: any): Condition | undefined => (obj?.status?.conditions ?? []).find((c: Condition) => c.type === 'Ready');
export const isReady = (obj: any): boolean => {
  const r = readyOf(obj);
  return r?.status === 'True' && (obj?.status?.observedGeneration ?? 0) === (obj?.metadata?.generation ?? 1);
};

/** A Go duration (`10m`, `1h30m`, `45s`) in milliseconds; `fallback` when absent or unreadable. */
export function durationMs(d: unknown, fallback: number): number {
  if (typeof d !== 'string' || !/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(d)) return fallback;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]];
  return total;
}

/**
 * kustomize- and helm-controller's `--requeue-dependency` default (their main.go): how soon a dependency or a
 * source that is not ready yet is looked at again. The twin keeps it exact, unlike the interval.
 */
export const DEPENDENCY_REQUEUE_MS = 30_000;

/** What a controller twin remembers of its last attempt at an object (upstream: its work queue). */
export interface Attempt {
  at: number;
  generation: number;
  /** When to look again, in ms after `at` (the requeue the attempt asked for). */
  retryMs: number;
  /** The source revision the attempt saw (a new one is an event, as upstream's source watch). */
  revision?: string;
}

/** The requeue after an interval-based outcome (success, or a failure at retryInterval), shortened in the twin. */
export const intervalRequeue = (d: unknown) => Math.min(TWIN_INTERVAL_MS, durationMs(d, TWIN_INTERVAL_MS));

/**
 * Whether an object needs a reconcile now: never attempted (by this leader), a new generation or a new
 * reconcile request (events upstream: GenerationChangedPredicate, ReconcileRequestedPredicate), or the
 * requeue of the last attempt is over. Not status.observedGeneration: upstream leaves it behind on a
 * failure, and a failed generation is retried only at its requeue.
 */
export function due(obj: any, last: Attempt | undefined, now = Date.now()): boolean {
  if (last === undefined) return true;
  if ((obj.metadata?.generation ?? 1) !== last.generation) return true;
  const req = obj.metadata?.annotations?.[REQUESTED_AT];
  if (req !== undefined && req !== obj.status?.lastHandledReconcileAt) return true;
  return now - last.at >= last.retryMs;
}

/** Every reconcile records the request it answered (status.lastHandledReconcileAt), failed or not. */
export function handled(obj: any): { lastHandledReconcileAt?: string } {
  const req = obj.metadata?.annotations?.[REQUESTED_AT];
  return req !== undefined ? { lastHandledReconcileAt: req } : {};
}

/**
 * status.observedGeneration, written only when the object ends Ready or Stalled (fluxcd/pkg runtime
 * `AddPatchOptions`; kustomize-controller `finalizeStatus`; helm-controller's deferred patch).
 */
export function observed(obj: any): { observedGeneration: number } {
  return { observedGeneration: obj.metadata?.generation ?? 1 };
}

/** Go's time.Duration String() for milliseconds: `30s`, `10m0s`, `1h0m0s`, `30.012s`. */
export function goDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${+ms.toFixed(3)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = `${+((ms % 60_000) / 1000).toFixed(3)}s`;
  return h ? `${h}h${m}m${s}` : m ? `${m}m${s}` : s;
}

/** Writes the status subresource; a conflict or a deleted object is left to the next round. */
export async function writeStatus(ctx: AddonContext, info: ResourceInfo, obj: any, status: any): Promise<void> {
  if (JSON.stringify(obj.status ?? {}) === JSON.stringify(status)) return;
  await ctx.store.update(info, obj.metadata.namespace, obj.metadata.name, { status }, { onlyStatus: true }).catch((e) => {
    if (!(e instanceof ApiError)) throw e;
  });
}

/** One controller's Lease (`<controller>-leader-election` in flux-system, 35 s as Flux configures it). */
export function fluxElector(ctx: AddonContext, controller: string): Elector {
  const leases = builtin('leases');
  const name = `${controller}-leader-election`;
  const io = {
    get: async () => {
      const l = await ctx.store.tryGet(leases, FLUX_NS, name);
      return l ? { spec: l.spec as LeaseSpec, resourceVersion: l.metadata.resourceVersion } : undefined;
    },
    create: async (spec: LeaseSpec) => {
      await ctx.store.create(leases, FLUX_NS, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: FLUX_NS }, spec });
    },
    update: async (spec: LeaseSpec, rv: string) => {
      const cur = await ctx.store.get(leases, FLUX_NS, name);
      await ctx.store.update(leases, FLUX_NS, name, { ...cur, spec }, { expectedRV: rv });
    },
  };
  return new Elector(io, `${controller}-${ctx.node}_${randomUUID()}`, 35);
}

/** The kind's ResourceInfo, or undefined while its CRD is not there. */
export const findKind = (ctx: AddonContext, apiVersion: string, kind: string) => ctx.registry.findKind(apiVersion, kind);
