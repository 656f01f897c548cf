// Variants of the lab inventory for end-to-end tests (lab/gitops-inventory.ts), and a file editor for them.
import { readFileSync, writeFileSync } from 'node:fs';
export { labInventoryWithGitops as labInventory } from '../../lab/gitops-inventory.ts';

/** Replace text in a file of the checkout copy (fails loudly when the text is not there). */
export function editFile(file: string, from: string | RegExp, to: string): void {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`${file}: ${from} not found`);
  writeFileSync(file, next);
}
