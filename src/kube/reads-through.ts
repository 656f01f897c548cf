// The cluster's objects read through a server (src/kube/cluster-reads.ts), for any phase that reads: the
// Kubernetes API over the run's SSH connection to it (src/kube/api-access.ts), or, while the state folder
// holds no kubeconfig, `k3s kubectl` on the server. @kubernetes/client-node is loaded only by a run that
// reads, and may start loading early (loadApiClient) so that it overlaps phases that wait on their hosts.
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { CauseError } from '../errors.ts';
import { kubectl, NOT_FOUND } from '../k3s/remote.ts';
import type { ClusterReads } from './cluster-reads.ts';
import { apiCredentials } from './admin-credentials.ts';
import type { ApiCredentials } from './get-through.ts';

/** A command's last line of output, for evidence (its status when it printed nothing). */
export const lastLine = (r: { stdout: string; stderr: string; code: number | null }) =>
  (r.stderr || r.stdout).trim().split('\n').at(-1) || (r.code === null ? 'no answer' : `exit ${r.code}`);

/** The API client, loaded only by a run that reads: @kubernetes/client-node costs most of a second to load. */
let client: Promise<[typeof import('./api-access.ts'), typeof import('./cluster-reads.ts')]> | undefined;

/**
 * Starts loading the API client (once a process) without waiting for it: a phase's prepare calls it, so that
 * the loading overlaps the phases before it, which mostly wait on their hosts.
 */
export function loadApiClient() {
  client ??= Promise.all([import('./api-access.ts'), import('./cluster-reads.ts')]);
  // Not lost if it fails: the first read awaits the same promise and names why.
  client.catch(() => undefined);
  return client;
}

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
  const [{ clusterApi }, { clusterReads }] = await loadApiClient();
  try {
    return clusterReads(await clusterApi(ctx, server));
  } catch (err) {
    // No kubeconfig in the state folder yet (a state folder of another machine, or one emptied): the phases
    // only read here, and `k3s kubectl` on the server (as root, with k3s's own admin kubeconfig) sees the
    // same cluster, so the reads go there instead of stopping for a file only the API's way needs.
    if (err instanceof CauseError && err.causeId === 'KUBECONFIG_NOT_FETCHED') return hostReads(ctx, server);
    throw err;
  }
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
