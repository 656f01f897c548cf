// What the add-on twins get from the k3s twin's server once its API serves: who this node is, the
// datastore the API itself uses (the add-ons act as in-cluster controllers and as this node's kubelet),
// and where the node keeps its files.
import type { ResourceInfo } from '../api/resources.ts';
import type { ServerContext } from '../server/run.ts';

/** The server's context (node, datastore, data dir, CNI dir), plus where the add-ons write their files. */
export interface AddonContext extends ServerContext {
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
