// The images the add-ons the engine installs will pull, computed from what the engine renders: the kube-vip
// DaemonSet, the Cilium chart's values (the chart's values.yaml under the HelmRelease's values, as Helm
// coalesces them) and the Flux install manifest. An air-gapped site must have each in an image archive.
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { parseAllDocuments, parse } from 'yaml';
import type { LoadedInventory } from '../inventory/load.ts';
import { tarFiles } from '../util/tar.ts';
import { factKey, remembered } from '../util/file-memo.ts';
import { ciliumValuesFor } from '../gitops/values-source.ts';
import { KUBE_VIP_IMAGE } from './pins.ts';

export interface RequiredImage {
  image: string;
  /** Who pulls it, for the message: `kube-vip`, `Cilium agent`, `Flux source-controller`… */
  by: string;
}

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Helm's coalesce: the release's values over the chart's defaults, maps merged key by key. */
export function coalesce(defaults: Record<string, any>, values: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...defaults };
  for (const [k, v] of Object.entries(values)) out[k] = isObj(v) && isObj(defaults[k]) ? coalesce(defaults[k], v) : v;
  return out;
}

/** The chart's templates/_helpers.tpl `cilium.image`: override, else repository[:tag][@digest when useDigest]. */
export function chartImage(img: any): string {
  if (img?.override) return String(img.override);
  const tag = img?.tag ? `:${img.tag}` : '';
  return `${img?.repository ?? ''}${tag}${img?.useDigest ? `@${img.digest}` : ''}`;
}

/** The images a Cilium 1.16–1.19 install with these (coalesced) values pulls, as its templates name them. */
export function ciliumImages(v: Record<string, any>): RequiredImage[] {
  const out: RequiredImage[] = [{ image: chartImage(v.image), by: 'Cilium agent' }];
  if (v.operator?.enabled !== false) {
    // templates/cilium-operator/_helpers.tpl cilium.operator.image: <repository>-<cloud><suffix>[:tag][@<cloud>Digest]
    const o = v.operator?.image ?? {};
    const cloud = v.eni?.enabled ? 'aws' : v.azure?.enabled ? 'azure' : v.alibabacloud?.enabled ? 'alibabacloud' : 'generic';
    const digest = o[`${cloud}Digest`];
    out.push({
      image: o.override ? String(o.override) : `${o.repository}-${cloud}${o.suffix ?? ''}${o.tag ? `:${o.tag}` : ''}${o.useDigest ? `@${digest}` : ''}`,
      by: 'Cilium operator',
    });
  }
  // _helpers.tpl envoyDaemonSetEnabled: off without l7Proxy, else envoy.enabled, else on (upgradeCompatibility >= 1.16).
  const envoy = v.l7Proxy === false ? false : (v.envoy?.enabled ?? true);
  if (envoy) out.push({ image: chartImage(v.envoy?.image), by: 'Cilium envoy' });
  if (v.hubble?.enabled && v.hubble?.relay?.enabled) out.push({ image: chartImage(v.hubble.relay.image), by: 'Hubble relay' });
  if ((v.hubble?.enabled || v.hubble?.ui?.standalone?.enabled) && v.hubble?.ui?.enabled) {
    out.push({ image: chartImage(v.hubble.ui.frontend?.image), by: 'Hubble UI' }, { image: chartImage(v.hubble.ui.backend?.image), by: 'Hubble UI backend' });
  }
  const tls = v.hubble?.tls;
  if (v.hubble?.enabled && tls?.enabled && tls?.auto?.enabled && tls?.auto?.method === 'cronJob')
    out.push({ image: chartImage(v.certgen?.image), by: 'Hubble certgen' });
  return out;
}

/** The chart's own values.yaml (the defaults under the release's values). */
export function chartDefaults(tgz: Buffer): Record<string, any> {
  const files = tarFiles(gunzipSync(tgz));
  const name = [...files.keys()].find((n) => /^[^/]+\/values\.yaml$/.test(n));
  return name ? ((parse(files.get(name)!.toString('utf8')) ?? {}) as Record<string, any>) : {};
}

/** Every container image of the Deployments, DaemonSets and StatefulSets of a manifest (the Flux install). */
export function manifestImages(text: string, label: (workload: string) => string): RequiredImage[] {
  const out: RequiredImage[] = [];
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJS() as any;
    if (!o || !['Deployment', 'DaemonSet', 'StatefulSet'].includes(o.kind)) continue;
    const spec = o.spec?.template?.spec ?? {};
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])])
      if (c?.image) out.push({ image: String(c.image), by: label(o.metadata?.name ?? o.kind) });
  }
  return out;
}

function tryOrUndefined<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * What the inventory's add-ons pull. Cilium's values come from the GitOps HelmRelease; when they cannot be
 * read the cilium phase names that cause itself, so Cilium's images are left out here rather than guessed.
 */
export async function requiredImages(
  inv: LoadedInventory,
  ciliumValues: () => Promise<Record<string, unknown>> = async () => (await ciliumValuesFor(inv)).values,
): Promise<RequiredImage[]> {
  const out: RequiredImage[] = [{ image: KUBE_VIP_IMAGE, by: 'kube-vip' }];
  const chart = inv.derived.paths.ciliumChart;
  if (chart && inv.inventory.gitops) {
    const values = await ciliumValues().catch(() => undefined);
    if (values) out.push(...(await chartImages(chart, values as Record<string, any>)));
  }
  const flux = inv.derived.paths.fluxInstall;
  if (flux) out.push(...(await fluxImages(flux)));
  const seen = new Set<string>();
  return out.filter((r) => !seen.has(r.image) && seen.add(r.image));
}

/**
 * The images Cilium's chart pulls with `values` over its defaults. Parsing the chart's values.yaml is most of
 * a converged run's local CPU, so the answer is remembered for this chart file and these values
 * (src/util/file-memo.ts). A chart that is no gzip tarball is the cilium phase's ARTIFACT_INVALID; its
 * images are left out here.
 */
async function chartImages(chart: string, values: Record<string, any>): Promise<RequiredImage[]> {
  const key = tryOrUndefined(() => factKey('cilium-images', chart, values));
  if (!key) return [];
  return remembered(key, async () => {
    const tgz = await readFile(chart).catch(() => undefined);
    const defaults = tgz && tryOrUndefined(() => chartDefaults(tgz));
    return defaults ? ciliumImages(coalesce(defaults, values)) : [];
  });
}

/** The images Flux's install manifests pull, remembered for this file as chartImages is. */
async function fluxImages(flux: string): Promise<RequiredImage[]> {
  const key = tryOrUndefined(() => factKey('flux-images', flux));
  if (!key) return [];
  return remembered(key, async () => {
    const text = await readFile(flux, 'utf8').catch(() => undefined);
    return text ? manifestImages(text, (w) => `Flux ${w}`) : [];
  });
}
