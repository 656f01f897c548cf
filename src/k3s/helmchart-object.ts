// The bootstrap's HelmChart as the hand-over and the cilium phase see it (read-only, `-o json`): whether it
// exists, carries `helmcharts.helm.cattle.io/unmanaged`, holds the finalizer helm-controller adds to a
// chart it manages, and is already marked for deletion. Pure.
import type { ProbeCommand, ProbeResult } from '../engine/phase.ts';
import { rawGetProbe } from './remote.ts';

export const UNMANAGED = 'helmcharts.helm.cattle.io/unmanaged';
/**
 * wrangler's `wrangler.cattle.io/` + the remove handler's name (k3s-io/helm-controller v0.16.17
 * pkg/controllers/chart/chart.go: RegisterScopedOnRemoveHandler "on-helm-chart-remove"; rancher/wrangler
 * v3.2.1 pkg/generic/remove.go). The scope is shouldManage, which is false for an unmanaged chart: then
 * nobody takes it off, and a deleted chart stays Terminating.
 */
export const REMOVE_FINALIZER = 'wrangler.cattle.io/on-helm-chart-remove';

export interface HelmChartObject {
  unmanaged: boolean;
  finalizers: string[];
  /** metadata.deletionTimestamp is set: deleted, held by a finalizer. */
  deleting: boolean;
}

/** The chart's path in the Kubernetes API. */
export const helmChartPath = (hc: { name: string; namespace: string }) => `/apis/helm.cattle.io/v1/namespaces/${hc.namespace}/helmcharts/${hc.name}`;

/** The chart as JSON; a missing one is kubectl's NotFound refusal (exit 1). */
export function helmChartProbe(hc: { name: string; namespace: string }): ProbeCommand {
  return rawGetProbe(helmChartPath(hc));
}

/** The chart, or undefined when it is gone (or could not be read). */
export function helmChartObject(r: ProbeResult | undefined): HelmChartObject | undefined {
  if (!r || r.code !== 0 || r.stdout.trim() === '') return undefined;
  const meta = JSON.parse(r.stdout).metadata ?? {};
  return {
    unmanaged: meta.annotations?.[UNMANAGED] !== undefined,
    finalizers: meta.finalizers ?? [],
    deleting: Boolean(meta.deletionTimestamp),
  };
}
