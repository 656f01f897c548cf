// The k3s HelmChart that installs Cilium with no helm CLI: the chart travels inside it (chartContent,
// base64), `bootstrap: true` runs the install Job on the host network of a node without a CNI, and the
// release name and namespace are the Flux HelmRelease's, so Flux adopts the release later. Deterministic:
// values are written with sorted keys, so the same values give the same bytes (the engine's idempotence).
import { Scalar, stringify } from 'yaml';
import { MANIFESTS_DIR } from './paths.ts';

export const HELMCHART_MANIFEST = `${MANIFESTS_DIR}/cilium.yaml`;

export interface HelmChartInput {
  releaseName: string;
  /** The release's namespace (targetNamespace). */
  namespace: string;
  chartTgz: Buffer;
  values: Record<string, unknown>;
  /** The chart's version. NOTE: with chartContent the content installs; Helm ignores --version for a local chart. */
  version?: string;
}

/**
 * The values as JSON (which is YAML) with keys sorted at every level. Not YAML: the install Job's Helm
 * reads valuesContent as YAML 1.1 (helm/helm v3 pkg/chartutil/values.go ReadValues: sigs.k8s.io/yaml on
 * go-yaml v2), where an unquoted
 * `on`, `yes` or `off` is a boolean, while a YAML 1.2 writer leaves them unquoted as strings. JSON quotes
 * every string, so both readings are the same values.
 */
export function valuesContent(values: Record<string, unknown>): string {
  return `${JSON.stringify(sortKeys(values), null, 2)}\n`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
  );
}

export function renderHelmChart(i: HelmChartInput): string {
  const doc = {
    apiVersion: 'helm.cattle.io/v1',
    kind: 'HelmChart',
    metadata: {
      // helm-controller names the release after the HelmChart.
      name: i.releaseName,
      namespace: 'kube-system',
    },
    spec: {
      bootstrap: true,
      targetNamespace: i.namespace,
      ...(i.version ? { version: i.version } : {}),
      valuesContent: valuesContent(i.values),
      chartContent: foldedBase64(i.chartTgz),
    },
  };
  return `# Written by bootstrap: installs ${i.releaseName} in ${i.namespace} until Flux adopts the release.\n${stringify(doc, { lineWidth: 80 })}`;
}

/**
 * The chart as base64 in a double-quoted scalar folded with escaped line breaks (`\` at line end): it reads
 * back as ONE unbroken string (YAML spec; checked with Go's YAML parser through kustomize), while a diff in
 * check mode shows a few short lines instead of one line of some 270 kB. Values come before it in the file.
 */
function foldedBase64(tgz: Buffer): Scalar {
  const scalar = new Scalar(tgz.toString('base64'));
  scalar.type = Scalar.QUOTE_DOUBLE;
  return scalar;
}
