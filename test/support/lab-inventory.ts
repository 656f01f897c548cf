// Variants of the lab inventory for end-to-end tests: the inventory `lab up` wrote, plus the GitOps fixture
// repository (test/fixtures/gitops, copied so a test can break it) and the real Cilium chart.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { paths } from '../../lab/api.ts';
import { repoRoot } from './cli.ts';

export const CILIUM_CHART = resolve(repoRoot, '..', 'shared', 'testdata', 'cilium-1.19.5.tgz');

export interface Variant {
  /** Edit the GitOps checkout copy (e.g. the HelmRelease) before the run. */
  gitops?: (checkout: string) => void;
  /** The overlay path inside the checkout (default clusters/lab). */
  clusterPath?: string;
  /** Edit the inventory object. */
  inventory?: (inv: any) => void;
}

/** Writes `<tmp>/lab.yaml` (the environment must be named after its file) and returns its path. */
export function labInventory(v: Variant = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'lab-inventory-'));
  const checkout = join(dir, 'gitops');
  cpSync(join(repoRoot, 'test', 'fixtures', 'gitops'), checkout, { recursive: true });
  v.gitops?.(checkout);
  const inv = parse(readFileSync(paths.inventory, 'utf8'));
  inv.gitops = { checkout, url: 'ssh://git@10.77.0.1/lab-gitops.git', branch: 'main', path: v.clusterPath ?? 'clusters/lab' };
  inv.cilium = { chart: CILIUM_CHART, helmRelease: 'platform/cilium/helmrelease.yaml' };
  v.inventory?.(inv);
  const file = join(dir, 'lab.yaml');
  writeFileSync(file, stringify(inv));
  return file;
}

/** Replace text in a file of the checkout copy (fails loudly when the text is not there). */
export function editFile(file: string, from: string | RegExp, to: string): void {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`${file}: ${from} not found`);
  writeFileSync(file, next);
}
