// What the add-on twins get from the k3s twin's server once its API serves: who this node is, the
// datastore the API itself uses (the add-ons act as in-cluster controllers and as this node's kubelet),
// and where the node keeps its files.
import type { ObjectStore } from '../api/store.ts';
import type { EtcdClient } from '../etcd/client.ts';
import type { ServerContext } from '../server/run.ts';
import type { NodeImages } from '../runtime/images.ts';

/** The object operations a kubelet and its pods need: the datastore itself on a server, the API on an agent. */
export type KubeStore = Pick<ObjectStore, 'get' | 'tryGet' | 'list' | 'create' | 'update' | 'delete'>;

/**
 * What a node's kubelet and the pods it runs get: who this node is, how it reads and writes objects, and
 * where the node keeps its files. `etcd` only on a server: there the kubelet also plays the DaemonSet
 * controller (rollout slots live in etcd).
 */
export interface NodeContext {
  node: string;
  ip: string;
  store: KubeStore;
  etcd?: EtcdClient;
  dataDir: string;
  serviceCidr: string;
  cniDir: string;
  /** The cluster's server CA as this node keeps it (default: a server's <data-dir>/server/tls/server-ca.crt). */
  caFile?: string;
  /** Root for files the add-ons write on the host (tests point it elsewhere). */
  root?: string;
  /** The images the node has (imported from agent/images) or can pull; none: every image is pullable. */
  images?: NodeImages;
}

/** The server's context (node, datastore, data dir, CNI dir), plus where the add-ons write their files. */
export interface AddonContext extends ServerContext {
  /** Root for files the add-ons write on the host (tests point it elsewhere). */
  root?: string;
  images?: NodeImages;
}

export const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
