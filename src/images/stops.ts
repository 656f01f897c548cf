// node-baseline's image check, before any change: the archives are sound, and on an air-gapped site
// (k3s.imageArchives names any) every image the add-ons pull is in one. No archives named: the nodes
// pull from registries, nothing to check here (a failed pull is then IMAGE_NOT_AVAILABLE at the gates).
import type { CauseError } from '../errors.ts';
import type { LoadedInventory } from '../inventory/load.ts';
import { missingImageStops, readArchives } from './check.ts';
import { requiredImages } from './required.ts';

/** `ciliumValues`: the run's render of Cilium's values (read only on an air-gapped site). */
export async function imageStops(inv: LoadedInventory, ciliumValues?: () => Promise<Record<string, unknown>>): Promise<CauseError[]> {
  const archives = inv.derived.paths.imageArchives ?? [];
  if (!archives.length) return [];
  const { read, stops } = await readArchives(archives);
  if (stops.length) return stops;
  return missingImageStops(await requiredImages(inv, ciliumValues), read);
}
