// `bootstrap plan <env>`: the DAG and its steps per host, without connecting.
import { validatedOrder } from '../engine/dag-rules.ts';
import { loadInventory, type LoadedInventory } from '../inventory/load.ts';
import { toValidateJson } from '../inventory/validate.ts';
import { InventoryInvalid } from '../errors.ts';
import { allPhases } from '../../phases/index.ts';
import type { Io } from './main.ts';

export async function planCommand(file: string, json: boolean, io: Io): Promise<number> {
  let loaded: LoadedInventory;
  try {
    loaded = await loadInventory(file);
  } catch (err) {
    // `plan --json` prints one JSON object for every verdict: a refused inventory as validate --json does.
    if (json && err instanceof InventoryInvalid) {
      io.out(JSON.stringify(toValidateJson({ ok: false, violations: err.violations })));
      return err.exitCode;
    }
    throw err;
  }
  const phases = validatedOrder(allPhases()).map((p) => ({
    id: p.id,
    title: p.title,
    needs: p.needs,
    hosts: p.hosts({ inventory: loaded }).map((h) => h.name),
    order: p.concurrency === 'serial' ? 'one host at a time' : `up to ${p.concurrency} hosts at once`,
    steps: p.steps.map((s) => s.title),
    gates: (p.gates ?? []).map((g) => ({ title: g.title, budgetS: Math.round(g.budgetMs / 1000) })),
    ...(p.pending && { pending: p.pending }),
  }));
  if (json) {
    io.out(JSON.stringify({ environment: loaded.inventory.environment, phases }, null, 2));
    return 0;
  }
  io.out(`environment ${loaded.inventory.environment}: ${phases.length} phases`);
  for (const w of loaded.derived.waivers) io.out(`  waiver: ${w.cause}: ${w.reason}`);
  for (const p of phases) {
    io.out(`${p.id}${p.needs.length ? `  (after ${p.needs.join(', ')})` : ''}${p.pending ? `  [${p.pending}]` : ''}`);
    io.out(`  ${p.title}; hosts: ${p.hosts.join(', ') || '(none)'}; ${p.order}`);
    for (const s of p.steps) io.out(`  - ${s}`);
    for (const g of p.gates) io.out(`  ⧗ ${g.title} (budget ${g.budgetS} s)`);
  }
  return 0;
}
