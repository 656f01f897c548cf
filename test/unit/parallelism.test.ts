// The inventory's `parallelism` (issue 17): how many independent hosts the engine works on at once — the
// per-host phases take it as their bound, the servers' joins and rolls stay one at a time.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { concurrencyOf } from '../../src/engine/phase.ts';
import { validateInventory } from '../../src/inventory/index.ts';
import { fromText } from '../../src/inventory/load.ts';
import { allPhases } from '../../phases/index.ts';

const valid = readFileSync(new URL('../fixtures/inventory/valid.yaml', import.meta.url), 'utf8');
const bounds = (text: string) => {
  const loaded = fromText(text, 'valid.yaml', '/home/ops');
  return Object.fromEntries(allPhases().map((p) => [p.id, concurrencyOf(p, { inventory: loaded })]));
};

describe('parallelism', () => {
  it('bounds node-baseline, kube-vip and the agents by the inventory (10 unless set); servers stay one at a time', () => {
    expect(bounds(valid)).toMatchObject({ 'node-baseline': 10, 'kube-vip': 10, agents: 10, 'k3s-join': 1, 'rolling-servers': 1, 'rolling-agents': 1 });
    expect(bounds(`${valid}\nparallelism: 3\n`)).toMatchObject({ 'node-baseline': 3, 'kube-vip': 3, agents: 3, 'k3s-join': 1, 'rolling-servers': 1 });
  });

  it('is a whole number from 1 to 100', () => {
    for (const bad of ['0', '101', '2.5', 'many']) {
      expect(validateInventory(`${valid}\nparallelism: ${bad}\n`, 'valid').ok, bad).toBe(false);
    }
  });
});
