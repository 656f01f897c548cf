// What the add-on twins get from the k3s twin's server once its API serves: who this node is, the
// datastore the API itself uses (the add-ons act as in-cluster controllers and as this node's kubelet),
// and where the node keeps its files.
import type { EtcdClient } from '../etcd/client.ts';
import type { ResourceInfo, ResourceRegistry } from '../api/resources.ts';
import type { ObjectStore } from '../api/store.ts';

export interface AddonContext {
  node: string;
  ip: string;
  store: ObjectStore;
  registry: ResourceRegistry;
  etcd: EtcdClient;
  /** k3s data dir (/var/lib/rancher/k3s): the cluster CA is in <dataDir>/server/tls/server-ca.crt. */
  dataDir: string;
  /** The k3s service CIDR (a ClusterIP in it is routed only by kube-proxy or a CNI). */
  serviceCidr: string;
  /** Where a CNI writes its config (the k3s twin's Ready hook reads it). */
  cniDir: string;
  /** Root for files the add-ons write on the host (tests point it elsewhere). */
  root?: string;
}

export async function kind(ctx: AddonContext, apiVersion: string, k: string): Promise<ResourceInfo> {
  const info = await ctx.registry.findKind(apiVersion, k);
  if (!info) throw new Error(`no matches for kind "${k}" in version "${apiVersion}"`);
  return info;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
