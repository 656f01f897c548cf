// Parity of the Cilium values across the hand-over: what the bootstrap installed (its HelmChart's
// valuesContent, or what it renders from the checkout once the HelmChart is gone) against what Flux
// reconciles (the live HelmRelease's spec.values). Any difference means Flux upgrades the release on
// adoption and rolls every agent. Pure.
import { parse } from 'yaml';

/** The dotted paths where `a` and `b` differ (`ipam.operator.clusterPoolIPv4PodCIDRList[0]`), sorted. */
export function valuesDiff(a: unknown, b: unknown, path = ''): string[] {
  const here = path || '.';
  // Helm treats a null value like an absent key.
  if (a == null && b == null) return [];
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return [here];
    return a.flatMap((v, i) => valuesDiff(v, b[i], `${path}[${i}]`));
  }
  if (isMap(a) && isMap(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => valuesDiff(a[k], b[k], path ? `${path}.${k}` : k));
  }
  return Object.is(a, b) ? [] : [here];
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The values a HelmChart installs (its valuesContent is YAML; absent or empty is no values). */
export function helmChartValues(helmChart: { spec?: { valuesContent?: string } }): Record<string, unknown> {
  // Read as Helm reads it (YAML 1.1: `on`/`yes` are booleans), so parity compares what was installed.
  const parsed = parse(helmChart.spec?.valuesContent ?? '', { version: '1.1' }) as unknown;
  return isMap(parsed) ? parsed : {};
}

export interface DaemonSetMark {
  /** The DaemonSet's template generation (it moves only when spec.template changes). */
  templateGeneration: number;
}

/** The cilium DaemonSet rolled between the two looks: its pod template changed (a new rollout width alone is no roll). */
export function rolled(before: DaemonSetMark | undefined, after: DaemonSetMark | undefined): boolean {
  return before !== undefined && after !== undefined && after.templateGeneration !== before.templateGeneration;
}
