// The engine's Kubernetes client: the admin kubeconfig from the state folder, dialling either a tunnel's
// local port (default) or the address in the file (direct).
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { readRegularText } from '../util/regular-file.ts';

export function kubeConfigFor(stateDir: string, opts: { tunnelPort?: number }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(readRegularText(join(stateDir, 'kubeconfig')));
  if (opts.tunnelPort !== undefined) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig names no current cluster');
    // The API's serving certificate names 127.0.0.1, so the tunnel's end verifies against the cluster CA.
    kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${opts.tunnelPort}`, skipTLSVerify: false } : c));
  }
  return kc;
}
