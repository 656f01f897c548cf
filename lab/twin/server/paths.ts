// Where k3s keeps things on a host (docs installation/configuration, cli/server, datastore/ha-embedded).
// These paths are the interface other lab components and the engine rely on; keep them stable.
import { join } from 'node:path';
import { type Settings, str } from '../config.ts';

export interface ServerPaths {
  dataDir: string;
  serverDir: string;
  token: string;
  nodeToken: string;
  agentToken: string;
  db: string;
  etcd: string;
  etcdName: string;
  tombstone: string;
  snapshots: string;
  manifests: string;
  kubeconfig: string;
  cniDirs: string[];
}

export function serverPaths(s: Settings): ServerPaths {
  const dataDir = str(s, 'data-dir', '/var/lib/rancher/k3s');
  const serverDir = join(dataDir, 'server');
  const db = join(serverDir, 'db');
  const etcd = join(db, 'etcd');
  return {
    dataDir,
    serverDir,
    token: join(serverDir, 'token'),
    nodeToken: join(serverDir, 'node-token'),
    agentToken: join(serverDir, 'agent-token'),
    db,
    etcd,
    etcdName: join(etcd, 'name'),
    tombstone: join(etcd, 'tombstone'),
    snapshots: str(s, 'etcd-snapshot-dir', join(db, 'snapshots')),
    manifests: join(serverDir, 'manifests'),
    kubeconfig: str(s, 'write-kubeconfig', '/etc/rancher/k3s/k3s.yaml'),
    // Ready hook: a CNI (or the lab's CNI twin) writes its config here, as kubelet/containerd expect it.
    cniDirs: ['/etc/cni/net.d', join(dataDir, 'agent', 'etc', 'cni', 'net.d')],
  };
}
