// The engine's Kubernetes client through an SSH tunnel to a server's 127.0.0.1:6443: it works when the
// operator cannot route to the node LAN (the dev environment sits behind NAT), with TLS verified.
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, expect, it } from 'vitest';
import { paths } from '../../lab/api.ts';
import { kubeConfigFor } from '../../src/kube/client.ts';
import { openTunnel } from '../../src/kube/tunnel.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster } from '../support/cluster.ts';

describeAsRoot('Kubernetes API through an SSH tunnel', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    const r = await bootstrap(['--until', 'k3s-founder'], { stateDir });
    expect(r.code, r.stdout.slice(-2000)).toBe(0);
  });

  it('lists the nodes with the fetched kubeconfig, verifying the cluster certificate through the tunnel', async () => {
    const transport = new SshTransport({ authSock: null });
    const remote = await transport.connect({
      name: 'k3s-lab-1',
      address: hosts()[0].address,
      port: 22,
      user: 'ops',
      identityFile: paths.key,
      knownHostsFile: paths.knownHosts,
    });
    const tunnel = await openTunnel(remote);
    try {
      const kc = kubeConfigFor(join(stateDir, 'lab'), { tunnelPort: tunnel.port });
      expect(kc.getCurrentCluster()?.skipTLSVerify).toBeFalsy();
      const nodes = await kc.makeApiClient(CoreV1Api).listNode();
      expect(nodes.items.map((n) => n.metadata?.name)).toEqual(['k3s-lab-1']);
    } finally {
      await tunnel.close();
      await remote.close();
      await transport.close();
    }
  });
});
