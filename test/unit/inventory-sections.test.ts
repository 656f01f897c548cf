// A phase that needs a missing inventory section names exactly the missing ones, with examples that are
// the same as inventory/prod.yaml's sections.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { missingSections, SECTION_EXAMPLES } from '../../src/inventory/sections.ts';
import type { Inventory } from '../../src/inventory/types.ts';
import type { PrepareContext } from '../../src/engine/context.ts';
import { fromText } from '../../src/inventory/load.ts';
import { cilium } from '../../phases/cilium.ts';
import { flux } from '../../phases/flux.ts';

const prod = parse(readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8')) as Inventory;

describe('missing inventory sections', () => {
  it("gives each section's example as inventory/prod.yaml has it", () => {
    for (const [name, text] of Object.entries(SECTION_EXAMPLES)) expect(parse(text), name).toEqual({ [name]: prod[name as keyof Inventory] });
  });

  it('names only the missing sections, with their examples and the --until that ends before the phase', () => {
    const { flux: _flux, ...withoutFlux } = prod;
    const stop = missingSections(withoutFlux as Inventory, { id: 'flux', before: 'verify' }, ['gitops', 'flux'], 'the flux phase syncs gitops.url')!;
    expect(stop.causeId).toBe('INVENTORY_SECTION_MISSING');
    expect(stop.message).toBe("The flux phase needs the inventory's flux section");
    expect(stop.evidence.seen).toBe('the inventory has no flux section: the flux phase syncs gitops.url');
    expect(stop.evidence.excerpt).toBe(SECTION_EXAMPLES.flux);
    expect(stop.remedy).toMatch(/^Add a flux section to the inventory .* \(--until verify\)\.$/);
    const { gitops: _g, cilium: _c, ...bare } = prod;
    const both = missingSections(bare as Inventory, { id: 'cilium', before: 'agents' }, ['gitops', 'cilium'], 'why')!;
    expect(both.message).toBe("The cilium phase needs the inventory's gitops and cilium sections");
    expect(both.evidence.excerpt).toBe(`${SECTION_EXAMPLES.gitops}\n${SECTION_EXAMPLES.cilium}`);
    expect(missingSections(prod, { id: 'cilium', before: 'agents' }, ['gitops', 'cilium'], 'why')).toBeUndefined();
  });

  it('is what the cilium and flux phases stop with, before they read any file', async () => {
    const text = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
    // prod.yaml's last sections are gitops, cilium and flux, in that order.
    const upTo = (section: string) => text.slice(0, text.indexOf(`\n${section}:`) + 1);
    const ctx = (t: string) => ({ inventory: fromText(t, '/x/inventory/prod.yaml', '/home/ops') }) as unknown as PrepareContext;
    const ciliumStops = (await cilium.prepare!(ctx(upTo('gitops')))).stops;
    expect(ciliumStops.map((s) => [s.causeId, s.message])).toEqual([
      ['INVENTORY_SECTION_MISSING', "The cilium phase needs the inventory's gitops and cilium sections"],
    ]);
    const fluxStops = (await flux.prepare!(ctx(upTo('flux')))).stops;
    expect(fluxStops.map((s) => [s.causeId, s.message])).toEqual([['INVENTORY_SECTION_MISSING', "The flux phase needs the inventory's flux section"]]);
  });
});
