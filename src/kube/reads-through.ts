// The cluster's objects read through a server (src/kube/get-reads.ts), for any phase that reads: the
// Kubernetes API over the run's SSH connection to it, or, while the state folder holds no kubeconfig,
// `k3s kubectl` on the server.
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { CauseError } from '../errors.ts';
import { kubectl, NOT_FOUND } from '../k3s/remote.ts';
import { apiCredentials } from './admin-credentials.ts';
import { getReads, type ClusterReads } from './get-reads.ts';
import type { ApiCredentials } from './get-through.ts';

/** A command's last line of output, for evidence (its status when it printed nothing). */
export const lastLine = (r: { stdout: string; stderr: string; code: number | null }) =>
  (r.stderr || r.stdout).trim().split('\n').at(-1) || (r.code === null ? 'no answer' : `exit ${r.code}`);

/**
 * The admin kubeconfig's CA and client certificate (src/kube/admin-credentials.ts, without the API client);
 * undefined while the state folder holds no kubeconfig (the caller asks on the hosts instead, as hostReads does).
 */
export async function apiCredentialsOf(ctx: RunContext): Promise<ApiCredentials | undefined> {
  try {
    return apiCredentials(ctx.stateDir);
  } catch (err) {
    if (err instanceof CauseError && err.causeId === 'KUBECONFIG_NOT_FETCHED') return undefined;
    throw err;
  }
}

/** The reads through `server`. */
export async function readsThrough(ctx: RunContext, server: HostRef): Promise<ClusterReads> {
  const creds = await apiCredentialsOf(ctx);
  // No kubeconfig in the state folder yet (a state folder of another machine, or one emptied): the phases
  // only read here, and `k3s kubectl` on the server (as root, with k3s's own admin kubeconfig) sees the
  // same cluster, so the reads go there instead of stopping for a file only the API's way needs.
  return creds ? getReads(ctx.remote(server), creds) : hostReads(ctx, server);
}

/** The same reads as `k3s kubectl get … -o json` on the server (one remote process each). */
function hostReads(ctx: RunContext, server: HostRef): ClusterReads {
  const get = async (what: string) => {
    const res = await kubectl(ctx, server, `get ${what} -o json --request-timeout=5s`, 10_000);
    if (res.code !== 0) throw new Error(lastLine(res));
    return JSON.parse(res.stdout);
  };
  const unlessNotFound = (err: Error) => {
    if (NOT_FOUND.test(err.message)) return undefined;
    throw err;
  };
  return {
    nodes: async () => (await get('nodes')).items ?? [],
    node: (name) => get(`node ${name}`).catch(unlessNotFound),
    lease: (namespace, name) => get(`lease -n ${namespace} ${name}`),
    pods: async (namespace, selector) => (await get(`pods -n ${namespace} -l ${selector}`)).items ?? [],
    deployment: (namespace, name) => get(`deployment -n ${namespace} ${name}`).catch(unlessNotFound),
  };
}
