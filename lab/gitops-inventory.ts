// The lab's GitOps side: a copy of the GitOps fixture repository (shaped like the operator's:
// platform/cilium/helmrelease.yaml, clusters/base cluster-vars, the clusters/lab overlay) published to the
// lab's git server (lab/gitops-server.ts) as the head of `main`, and the inventory sections that name it,
// the real chart, the lab's Flux install manifest, the deploy key and its known_hosts. `lab up` writes
// them into the lab inventory; tests make variants of it in a temporary folder.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { chartMissing, placeChart } from './cilium-chart.ts';
import { NET, paths } from './config.ts';
import { LabUsage } from './errors.ts';
import { LAB_CLUSTER_CIDR } from './inventory.ts';
import { publishGitopsSync } from './gitops-publish.ts';
import { gitopsSections } from './gitops-sections.ts';

export { publishGitops } from './gitops-publish.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..');
export const GITOPS_FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'gitops');

export interface GitopsVariant {
  /** Edit the GitOps checkout copy (e.g. the HelmRelease) before the run. */
  gitops?: (checkout: string) => void;
  /** The overlay path inside the checkout (default clusters/lab). */
  clusterPath?: string;
  /** Edit the inventory object (after gitops and flux are set: e.g. point flux.deployKeyFile elsewhere). */
  inventory?: (inv: any) => void;
  /** Publish the checkout to the lab's git server (default true). */
  publish?: boolean;
}

/** The fixture copied to `checkout` (replacing what was there) with this lab's addresses and pod network, then published. */
export function prepareGitopsCheckout(checkout: string, v: Pick<GitopsVariant, 'gitops' | 'publish'> = {}): void {
  rmSync(checkout, { recursive: true, force: true });
  cpSync(GITOPS_FIXTURE, checkout, { recursive: true });
  // The fixture's lab overlay carries the default lab's addresses; a second lab has its own subnet.
  const overlay = join(checkout, 'clusters', 'lab', 'kustomization.yaml');
  if (NET.base !== '10.77.0.') writeFileSync(overlay, readFileSync(overlay, 'utf8').replaceAll('10.77.0.', NET.base));
  // The fixture's HelmRelease names k3s's default pod network; the lab builds on its own (lab/inventory.ts).
  const release = join(checkout, 'platform', 'cilium', 'helmrelease.yaml');
  writeFileSync(release, readFileSync(release, 'utf8').replaceAll('"10.42.0.0/16"', `"${LAB_CLUSTER_CIDR}"`));
  v.gitops?.(checkout);
  if (v.publish !== false) publishGitopsSync(checkout, 'main');
}

/**
 * A variant of the lab inventory in a temporary folder, with its own copy of the GitOps fixture published
 * as the head of `main`: writes `<tmp>/lab.yaml` (an environment is named after its file) and returns its path.
 */
export function labInventoryWithGitops(v: GitopsVariant = {}): string {
  if (!placeChart(paths)) throw new LabUsage(chartMissing(paths)!);
  const dir = mkdtempSync(join(tmpdir(), 'lab-inventory-'));
  const checkout = join(dir, 'gitops');
  prepareGitopsCheckout(checkout, v);
  const inv = { ...parse(readFileSync(paths.inventory, 'utf8')), ...gitopsSections(paths, checkout, v.clusterPath) };
  v.inventory?.(inv);
  const file = join(dir, 'lab.yaml');
  writeFileSync(file, stringify(inv));
  return file;
}

/**
 * A fresh ed25519 key the lab's git server does not accept (0600, in a new temporary folder): for
 * `inventory: (inv) => { inv.flux.deployKeyFile = unauthorisedDeployKey() }`.
 */
export function unauthorisedDeployKey(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'lab-wrong-key-')), 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'not-the-deploy-key', '-f', file]);
  chmodSync(file, 0o600);
  return file;
}
