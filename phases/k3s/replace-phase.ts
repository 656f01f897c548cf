// A phase as it runs against another view of the inventory: every callback (hosts, preflight, steps,
// gates) gets the run context with that inventory, nothing else differs (facts, connections, clock).
import type { LocalContext, PrepareContext, ReadContext, RunContext } from '../../src/engine/context.ts';
import type { Phase } from '../../src/engine/phase.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';

export function withInventory(p: Phase, inventory: LoadedInventory): Phase {
  const swap = <C extends Pick<ReadContext, 'inventory'>>(c: C): C => ({ ...c, inventory });
  const pre = p.preflight;
  return {
    ...p,
    hosts: (c) => p.hosts(swap(c)),
    ...(p.prepare && { prepare: (c: PrepareContext) => p.prepare!(swap(c)) }),
    ...(pre && {
      preflight: {
        ...(pre.hosts && { hosts: (c: Pick<ReadContext, 'inventory'>) => pre.hosts!(swap(c)) }),
        probe: (h, c) => pre.probe(h, swap(c)),
        check: (seen, c) => pre.check(seen, swap(c)),
      },
    }),
    steps: p.steps.map((s) => ({
      ...s,
      ...(s.probe && { probe: (h: Parameters<NonNullable<typeof s.probe>>[0], c: ReadContext) => s.probe!(h, swap(c)) }),
      ...(s.local && { local: (h: Parameters<NonNullable<typeof s.local>>[0], c: LocalContext) => s.local!(h, swap(c)) }),
      plan: (input) => s.plan({ ...input, ctx: swap(input.ctx) }),
      ...(s.apply && { apply: (plan: Parameters<NonNullable<typeof s.apply>>[0], h: Parameters<NonNullable<typeof s.apply>>[1], c: RunContext) => s.apply!(plan, h, swap(c)) }),
    })),
    ...(p.gates && { gates: p.gates.map((g) => ({ ...g, run: (h: Parameters<typeof g.run>[0], c: RunContext, signal: AbortSignal) => g.run(h, swap(c), signal) })) }),
  };
}
