// kstatus as Flux's health checks read it (fluxcd/pkg/ssa + sigs.k8s.io/cli-utils kstatus): a Deployment
// is Current when it observed its generation and all replicas are updated and available; a DaemonSet when
// every scheduled pod is updated and ready; a Flux object when Ready=True for its generation; anything
// else that exists is Current. Missing objects are NotFound.
import type { AddonContext } from '../context.ts';
import { findKind, isReady, readyOf } from './common.ts';

export type Health = 'Current' | 'InProgress' | 'Failed' | 'NotFound';

export function kstatus(o: any): Health {
  const s = o.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (o.metadata?.generation ?? 1);
  if (o.kind === 'Deployment') {
    const want = Number(o.spec?.replicas ?? 1);
    return observed && (s.updatedReplicas ?? 0) >= want && (s.availableReplicas ?? 0) >= want ? 'Current' : 'InProgress';
  }
  if (o.kind === 'DaemonSet') {
    const want = Number(s.desiredNumberScheduled ?? 0);
    return observed && want > 0 && (s.updatedNumberScheduled ?? 0) >= want && (s.numberReady ?? 0) >= want ? 'Current' : 'InProgress';
  }
  if (String(o.apiVersion).includes('toolkit.fluxcd.io')) {
    if (isReady(o)) return 'Current';
    const r = readyOf(o);
    return r?.status === 'False' && observed ? 'Failed' : 'InProgress';
  }
  return 'Current';
}

export async function healthOf(ctx: AddonContext, t: { apiVersion: string; kind: string; namespace?: string; name: string }): Promise<Health> {
  const info = await findKind(ctx, t.apiVersion, t.kind);
  if (!info) return 'NotFound';
  const o = await ctx.store.tryGet(info, info.namespaced ? t.namespace : undefined, t.name);
  return o ? kstatus(o) : 'NotFound';
}
