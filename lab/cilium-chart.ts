// The real Cilium chart of the lab (never committed: it is Cilium's release, not ours). `lab up` places it
// in the lab's artifacts folder, where the lab inventory's `cilium.chart` names it, from the copy beside
// the repository (or BOOTSTRAP_CILIUM_CHART). Without either, the inventory still names the artifacts
// folder's place, and what to download and from where is said instead of a stack trace.
import { copyFileSync, existsSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { LabPaths } from './config.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..');
const CILIUM_CHART_VERSION = '1.19.5';
const CHART_FILE = `cilium-${CILIUM_CHART_VERSION}.tgz`;
/** Where `lab up` takes the chart from: BOOTSTRAP_CILIUM_CHART, else beside the repository. */
const CILIUM_CHART_SOURCE = resolve(process.env.BOOTSTRAP_CILIUM_CHART ?? join(REPO_ROOT, '..', 'shared', 'testdata', CHART_FILE));
/** The chart in Cilium's Helm repository (`helm repo add cilium https://helm.cilium.io/`; `helm pull cilium/cilium --version 1.19.5`). */
const CILIUM_CHART_URL = `https://helm.cilium.io/${CHART_FILE}`;

/** The place the lab inventory names. */
export const labChartPath = (p: Pick<LabPaths, 'artifacts'>) => join(p.artifacts, CHART_FILE);

/** Copies the source into the artifacts folder when it differs (whole, by rename). Returns whether the lab has the chart. */
export function placeChart(p: Pick<LabPaths, 'artifacts'>): boolean {
  const target = labChartPath(p);
  if (existsSync(CILIUM_CHART_SOURCE) && (!existsSync(target) || !readFileSync(target).equals(readFileSync(CILIUM_CHART_SOURCE)))) {
    copyFileSync(CILIUM_CHART_SOURCE, `${target}.part`);
    renameSync(`${target}.part`, target);
  }
  return existsSync(target);
}

/** What to do when neither the lab's chart nor its source is there: where it goes and the command that gets it. */
export function chartMissing(p: Pick<LabPaths, 'artifacts'>): string | undefined {
  if (existsSync(labChartPath(p)) || existsSync(CILIUM_CHART_SOURCE)) return undefined;
  // Worded as the CLI words a stop: the cause id first (bootstrap causes, runbooks/causes.md explain it).
  return [
    `stopped: ARTIFACT_MISSING — the Cilium chart is not at ${CILIUM_CHART_SOURCE}. Get it from Cilium's Helm repository:`,
    `  mkdir -p ${dirname(CILIUM_CHART_SOURCE)} && curl -fL -o ${CILIUM_CHART_SOURCE} ${CILIUM_CHART_URL}   (or: wget -O ${CILIUM_CHART_SOURCE} ${CILIUM_CHART_URL})`,
    `or put the file elsewhere and set BOOTSTRAP_CILIUM_CHART to its path.`,
    `runbook: runbooks/causes.md#artifact_missing`,
  ].join('\n');
}
