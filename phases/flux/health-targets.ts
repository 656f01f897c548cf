// What a Kustomization's running health checks wait for, and which of those objects are not ready yet, so a
// budget that ends before kustomize-controller's own timeout (spec.timeout, else the interval less 30 s)
// still names the workload. Pure: the objects as the API returns them (JSON) in, text out. The readiness
// rules are a subset of kstatus (fluxcd/cli-utils pkg/kstatus/status) for the kinds it judges by replicas.
import { objectPath } from '../../src/kube/resources.ts';
import type { FluxObject } from './root-cause.ts';

export interface HealthTarget {
  kind: string;
  namespace: string;
  name: string;
}

/**
 * The kinds judged here: kubectl's resource name and the API version read (its path: src/kube/resources.ts); other
 * kinds are left to the controller's message.
 */
const RESOURCES: Record<string, { ref: string; apiVersion: string }> = {
  Deployment: { ref: 'deployment.apps', apiVersion: 'apps/v1' },
  DaemonSet: { ref: 'daemonset.apps', apiVersion: 'apps/v1' },
  StatefulSet: { ref: 'statefulset.apps', apiVersion: 'apps/v1' },
  HelmRelease: { ref: 'helmrelease.helm.toolkit.fluxcd.io', apiVersion: 'helm.toolkit.fluxcd.io/v2' },
};

/** spec.healthChecks, or with spec.wait every applied object (the inventory ids `ns_name_group_Kind`). */
export function healthTargets(k: FluxObject & { spec?: any }): HealthTarget[] {
  const ns = k.metadata.namespace ?? 'default';
  const all: HealthTarget[] = k.spec?.wait
    ? (k.status?.inventory?.entries ?? []).map((e) => {
        const [namespace, name, , kind] = e.id.split('_');
        return { kind, namespace: namespace || ns, name };
      })
    : (k.spec?.healthChecks ?? []).map((h: any) => ({ kind: h.kind, namespace: h.namespace ?? ns, name: h.name }));
  return all.filter((t) => RESOURCES[t.kind]);
}

/**
 * One read per target (each once): its path in the API (src/kube/api-read.ts apiRead, through the run's SSH
 * connection) and the same read as `k3s kubectl` arguments. A target that is not there answers NotFound.
 */
export function targetReads(targets: HealthTarget[]): { path: string; kubectl: string }[] {
  const seen = new Set<string>();
  return targets.flatMap((t) => {
    const r = RESOURCES[t.kind];
    const key = `${t.kind} ${t.namespace}/${t.name}`;
    if (!r || seen.has(key)) return [];
    seen.add(key);
    const path = objectPath({ apiVersion: r.apiVersion, kind: t.kind, metadata: { name: t.name, namespace: t.namespace } })!;
    return [{ path, kubectl: `get ${r.ref}/${t.name} -n ${t.namespace} -o json` }];
  });
}

/** Why an object is not ready, or undefined when it is. */
function notReadyReason(o: any): string | undefined {
  const s = o.status ?? {};
  if ((s.observedGeneration ?? 0) < (o.metadata?.generation ?? 0)) return 'its controller has not observed the latest generation';
  if (o.kind === 'Deployment' || o.kind === 'StatefulSet') {
    const want = Number(o.spec?.replicas ?? 1);
    const have = Number(o.kind === 'Deployment' ? (s.availableReplicas ?? 0) : (s.readyReplicas ?? 0));
    const updated = Number(s.updatedReplicas ?? 0);
    if (have < want || updated < want) return `${have}/${want} ${o.kind === 'Deployment' ? 'available' : 'ready'}, ${updated} updated`;
    return undefined;
  }
  if (o.kind === 'DaemonSet') {
    const want = Number(s.desiredNumberScheduled ?? 0);
    if (Number(s.numberReady ?? 0) < want || Number(s.updatedNumberScheduled ?? 0) < want)
      return `${s.numberReady ?? 0}/${want} ready, ${s.updatedNumberScheduled ?? 0} updated`;
    return undefined;
  }
  const ready = (s.conditions ?? []).find((c: any) => c.type === 'Ready');
  return ready?.status === 'True' ? undefined : `Ready ${ready?.status ?? 'missing'}${ready ? `: ${ready.reason}: ${ready.message}` : ''}`;
}

/** `Deployment/default/web (0/1 available, 0 updated)` for each target not ready (NotFound when absent). */
export function notReadyText(targets: HealthTarget[], found: any[]): string[] {
  return targets.flatMap((t) => {
    const o = found.find((x) => x.kind === t.kind && x.metadata?.name === t.name && (x.metadata?.namespace ?? t.namespace) === t.namespace);
    const why = o ? notReadyReason(o) : 'NotFound';
    return why ? [`${t.kind}/${t.namespace}/${t.name} (${why})`] : [];
  });
}
