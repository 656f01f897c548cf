// How many independent hosts the engine works on at once: the inventory's `parallelism` (default 10, the
// schema's). Contexts built without an inventory (engine tests) get the default.
import type { LoadedInventory } from './load.ts';

const DEFAULT_PARALLELISM = 10;

export function parallelismOf(loaded: Pick<LoadedInventory, 'inventory'> | undefined): number {
  return loaded?.inventory?.parallelism ?? DEFAULT_PARALLELISM;
}
