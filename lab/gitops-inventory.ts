// The lab inventory with a GitOps repository and the Cilium chart, for builds past the joins: the
// inventory `lab up` wrote, plus a copy of the GitOps fixture repository (shaped like the operator's:
// platform/cilium/helmrelease.yaml, clusters/base cluster-vars, the clusters/lab overlay) and the real chart.
// The copy is published to the lab's git server (lab/gitops-server.ts) as the head of `main`, and the
// inventory names that server's URL, the lab's Flux install manifest, the deploy key and its known_hosts.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { NET, paths } from './config.ts';
import { LabUsage } from './errors.ts';
import { LAB_CLUSTER_CIDR } from './inventory.ts';
import { publishGitopsSync } from './gitops-publish.ts';
import { gitopsUrl, gitServerPaths } from './gitops-server.ts';

export { publishGitops } from './gitops-publish.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..');
export const GITOPS_FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'gitops');
/** The real Cilium chart (never committed): BOOTSTRAP_CILIUM_CHART, else beside the repository. */
export const CILIUM_CHART = resolve(process.env.BOOTSTRAP_CILIUM_CHART ?? join(REPO_ROOT, '..', 'shared', 'testdata', 'cilium-1.19.5.tgz'));

/** The chart in Cilium's Helm repository (`helm repo add cilium https://helm.cilium.io/`; `helm pull cilium/cilium --version 1.19.5`). */
const CHART_URL = 'https://helm.cilium.io/cilium-1.19.5.tgz';

/** What to do when the chart is not there: where it goes and the command that gets it (Cilium's Helm repository). */
export function chartMissing(): string | undefined {
  if (existsSync(CILIUM_CHART)) return undefined;
  return [
    `the Cilium chart is not at ${CILIUM_CHART}. Get it from Cilium's Helm repository:`,
    `  mkdir -p ${dirname(CILIUM_CHART)} && curl -fL -o ${CILIUM_CHART} ${CHART_URL}   (or: wget -O ${CILIUM_CHART} ${CHART_URL})`,
    `or put the file elsewhere and set BOOTSTRAP_CILIUM_CHART to its path.`,
  ].join('\n');
}

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

/** Writes `<tmp>/lab.yaml` (an environment is named after its file) and returns its path. */
export function labInventoryWithGitops(v: GitopsVariant = {}): string {
  const missing = chartMissing();
  if (missing) throw new LabUsage(missing);
  const dir = mkdtempSync(join(tmpdir(), 'lab-inventory-'));
  const checkout = join(dir, 'gitops');
  cpSync(GITOPS_FIXTURE, checkout, { recursive: true });
  // The fixture's lab overlay carries the default lab's addresses; a second lab has its own subnet.
  const overlay = join(checkout, 'clusters', 'lab', 'kustomization.yaml');
  if (NET.base !== '10.77.0.') writeFileSync(overlay, readFileSync(overlay, 'utf8').replaceAll('10.77.0.', NET.base));
  // The fixture's HelmRelease names k3s's default pod network; the lab builds on its own (lab/inventory.ts).
  const release = join(checkout, 'platform', 'cilium', 'helmrelease.yaml');
  writeFileSync(release, readFileSync(release, 'utf8').replaceAll('"10.42.0.0/16"', `"${LAB_CLUSTER_CIDR}"`));
  v.gitops?.(checkout);
  if (v.publish !== false) publishGitopsSync(checkout, 'main');
  const inv = parse(readFileSync(paths.inventory, 'utf8'));
  inv.gitops = { checkout, url: gitopsUrl(), branch: 'main', path: v.clusterPath ?? 'clusters/lab' };
  inv.cilium = { chart: CILIUM_CHART, helmRelease: 'platform/cilium/helmrelease.yaml' };
  const git = gitServerPaths();
  inv.flux = { install: join(paths.artifacts, 'flux-install.yaml'), deployKeyFile: git.deployKey, knownHostsFile: git.knownHosts };
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
