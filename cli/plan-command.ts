// `bootstrap plan <env>`: the build's DAG and its steps per host (modes/build.ts), without connecting.
import { loadInventory } from '../src/inventory/load.ts';
import { buildOutline } from '../modes/build.ts';
import { orJsonRefusal } from './json-refusal.ts';
import type { Io } from './io.ts';

export async function planCommand(file: string, json: boolean, io: Io): Promise<number> {
  const read = await orJsonRefusal(json, io, () => loadInventory(file));
  if ('exit' in read) return read.exit;
  const loaded = read.value;
  const phases = buildOutline(loaded);
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
