// The lab inventory's gitops, cilium and flux sections: the lab's git server and its deploy key, the chart
// in the artifacts folder (lab/cilium-chart.ts), the lab's Flux install manifest (lab/flux-install.ts).
import { join } from 'node:path';
import { labChartPath } from './cilium-chart.ts';
import type { LabPaths } from './config.ts';
import { gitopsUrl, gitServerPaths } from './gitops-server.ts';

/** The inventory's gitops, cilium and flux sections for a checkout of the lab's repository. */
export function gitopsSections(p: Pick<LabPaths, 'artifacts' | 'stateDir'>, checkout: string, clusterPath = 'clusters/lab') {
  const git = gitServerPaths(p.stateDir);
  return {
    gitops: { checkout, url: gitopsUrl(), branch: 'main', path: clusterPath },
    cilium: { chart: labChartPath(p), helmRelease: 'platform/cilium/helmrelease.yaml' },
    flux: { install: join(p.artifacts, 'flux-install.yaml'), deployKeyFile: git.deployKey, knownHostsFile: git.knownHosts },
  };
}
