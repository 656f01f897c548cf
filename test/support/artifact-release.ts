// A k3s, Cilium and Flux release as fixture bytes, served the way upstream lays them out (under /k3s,
// /cilium and /flux of test/support/artifact-server.ts), and an inventory that names them.
import { createHash } from 'node:crypto';
import type { ArtifactServer } from './artifact-server.ts';

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
export const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));

export const K3S = bytes(300_000, 1);
export const AIRGAP = bytes(120_000, 2);
export const CHART = bytes(50_000, 3);
export const FLUX = 'apiVersion: v1\nkind: Namespace\nmetadata: { name: flux-system }\n';
export const V = 'v1.33.5+k3s1';

export const inventory = (extra: { flux?: string; archives?: string } = {}) => `
environment: lab
ssh: { user: ops }
k3s:
  version: ${V}
  artifacts: ./artifacts/k3s
${extra.archives ?? ''}
controlPlane: { vip: 10.0.0.9 }
network: { nodeCidr: 10.0.0.0/24 }
servers:
  - { name: lab-1, address: 10.0.0.10, founder: true }
  - { name: lab-2, address: 10.0.0.11 }
  - { name: lab-3, address: 10.0.0.12 }
gitops: { checkout: ./gitops, url: ssh://git@git.example/x.git, branch: main, path: clusters/lab }
cilium: { chart: ./artifacts/cilium-1.19.5.tgz, helmRelease: platform/cilium/helmrelease.yaml }
flux: { install: ./artifacts/flux-install.yaml, deployKeyFile: ./key, knownHostsFile: ./kh, ${extra.flux ?? `version: v2.6.4, installSha256: ${sha(FLUX)}`} }
`;

export function serveRelease(s: ArtifactServer, k3sList = `${sha(K3S)}  k3s\n${sha(AIRGAP)}  k3s-airgap-images-amd64.tar.zst\n`) {
  s.routes.set(`/k3s/${V}/k3s`, { body: K3S });
  s.routes.set(`/k3s/${V}/k3s-airgap-images-amd64.tar.zst`, { body: AIRGAP });
  s.routes.set(`/k3s/${V}/sha256sum-amd64.txt`, { body: k3sList });
  s.routes.set('/cilium/cilium-1.19.5.tgz', { body: CHART });
  s.routes.set('/cilium/index.yaml', {
    body: `apiVersion: v1\nentries:\n  cilium:\n    - version: 1.19.4\n      digest: ${sha('old')}\n    - version: 1.19.5\n      digest: ${sha(CHART)}\n      urls: [https://helm.cilium.io/cilium-1.19.5.tgz]\n`,
  });
  s.routes.set('/flux/v2.6.4/install.yaml', { body: FLUX });
}

/** The environment that points `bootstrap artifacts` at the server instead of the upstream releases. */
export const releaseEnv = (base: string) => ({
  BOOTSTRAP_K3S_RELEASES: `${base}/k3s`,
  BOOTSTRAP_CILIUM_CHARTS: `${base}/cilium/`,
  BOOTSTRAP_FLUX_RELEASES: `${base}/flux`,
});
