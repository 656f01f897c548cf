// Everything the Cilium phase decides before touching a host, in one pure function: the gates on the
// values (with the chart's version and schema) and, when none stops, the HelmChart manifest.
// The cgroup probe is per node and separate (cgroup.ts: checkCgroupHostRoot).
import { CauseError } from '../../src/errors.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import { chartInfo, checkChartVersion, schemaStops, schemaViolations, type ChartInfo, type SchemaViolation } from './chart.ts';
import { renderHelmChart } from '../../src/k3s/helmchart.ts';
import { checkCiliumValues, expectationsFrom } from './values-gates.ts';
import type { CiliumValues } from '../../src/gitops/values-source.ts';

export interface CiliumInstallPlan {
  /** The HelmChart for the auto-deploy folder, when no stop forbids the install. */
  manifest?: string;
  stops: CauseError[];
}

/**
 * `violations`: the values' schema violations when already known for this chart (else checked here); `chart`:
 * its name and version when already known (else read from the tgz; the schema is read only to check values).
 */
export function ciliumInstallPlan(
  inv: LoadedInventory,
  source: CiliumValues,
  chartTgz: Buffer,
  chartPath: string,
  violations?: SchemaViolation[],
  chart: ChartInfo = chartInfo(chartTgz, chartPath),
): CiliumInstallPlan {
  const stops = [
    ...checkAdoptable(source),
    ...checkChartVersion(source.chartVersion, chart, chartPath),
    ...checkCiliumValues(source.values, expectationsFrom(inv)),
    ...schemaStops(violations ?? schemaViolations(source.values, chart.schema ?? chartInfo(chartTgz, chartPath).schema)),
  ];
  if (stops.length) return { stops };
  const manifest = renderHelmChart({ releaseName: source.releaseName, namespace: source.namespace, chartTgz, values: source.values, version: chart.version });
  return { manifest, stops: [] };
}

/**
 * The HelmChart's install stores the release in its target namespace; Flux looks for it in the
 * HelmRelease's storageNamespace. When they differ Flux would not find the release and install a second one.
 */
export function checkAdoptable(source: CiliumValues): CauseError[] {
  if (source.storageNamespace === source.namespace) return [];
  const seen = `the HelmRelease keeps its release in ${source.storageNamespace} (storageNamespace) but installs into ${source.namespace}: Flux would not adopt the bootstrap's release there`;
  return [new CauseError('GITOPS_SOURCE_INVALID', { message: seen, evidence: { seen, excerpt: 'spec.storageNamespace, spec.targetNamespace' } })];
}
