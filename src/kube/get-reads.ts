// The reads of the cluster that verify judges (phases/verify/read.ts) and the agents' gate asks, as plain GETs
// of the Kubernetes API at a server's 127.0.0.1:6443 through the run's SSH connection to it (getThrough: TLS
// verified against the cluster CA, the admin kubeconfig's client certificate). The objects are the API's JSON,
// as `k3s kubectl get -o json` prints them. A converged run reads only these, so it does not load
// @kubernetes/client-node (about 0.3 s of the engine's CPU at each start); the client stays for what writes or
// watches (drains, server-side applies). Each read is answered within READ_TIMEOUT_MS or abandoned; a failure
// is named as the client's are (src/kube/api-failure.ts): KUBE_API_FAILED with the request, the HTTP status
// and the API's message, or SSH_FORWARD_FAILED when the SSH connection would not forward it.
import type { V1Deployment, V1Lease, V1Node, V1Pod } from '@kubernetes/client-node';
import { CauseError } from '../errors.ts';
import type { Remote } from '../transport/types.ts';
import { failedAs } from './api-failure.ts';
import { getThrough, OWN_API, type ApiCredentials } from './get-through.ts';

/** What verify reads; the objects as the API holds them (the JSON of `kubectl get -o json`). */
export interface ClusterReads {
  nodes(): Promise<V1Node[]>;
  /** undefined when the API answers that there is no such Node. */
  node(name: string): Promise<V1Node | undefined>;
  lease(namespace: string, name: string): Promise<V1Lease>;
  pods(namespace: string, labelSelector: string): Promise<V1Pod[]>;
  /** undefined when the API answers that there is no such Deployment. */
  deployment(namespace: string, name: string): Promise<V1Deployment | undefined>;
}

/** As `kubectl --request-timeout=5s`: a server that accepts the connection but does not answer is left. */
const READ_TIMEOUT_MS = 5_000;

/**
 * One GET; `command`: what the operator runs on the server to see the same. `orMissing`: a 404 (no such object)
 * is undefined rather than a failure.
 */
async function get<T>(remote: Remote, creds: ApiCredentials, path: string, command: string, orMissing = false): Promise<T> {
  const request = `GET ${path}`;
  const got = await getThrough(remote, OWN_API.address, OWN_API.port, path, creds, READ_TIMEOUT_MS);
  // The server's own API with a certificate the kubeconfig's CA does not verify: the kubeconfig is another cluster's.
  // k3s signs each server's serving certificate with the cluster's server CA (k3s-io/k3s @09ac65a6
  // pkg/daemons/control/deps/deps.go genServerCerts, runtime.ServerCA), the CA its admin kubeconfig carries.
  if (got.status === undefined && got.certificate)
    throw new CauseError('KUBECONFIG_CA_MISMATCH', {
      host: remote.host,
      message: `${remote.host}'s API certificate is not verified by the state folder's kubeconfig`,
      evidence: { command, seen: `${request}: ${got.seen}` },
    });
  // "no answer within 5 s" reads "GET …: no answer: none within 5 s" in failedAs's words.
  if (got.status === undefined) throw failedAs(request, { command }, new Error(got.seen.replace('no answer within', 'none within')), got.forward);
  if (got.status === 404 && orMissing) return undefined as T;
  if (got.status !== 200) throw failedAs(request, { command }, { code: got.status, body: got.body, message: `HTTP ${got.status}` });
  try {
    return JSON.parse(got.body) as T;
  } catch (err) {
    throw failedAs(request, { command }, new Error(`an answer that is not JSON: ${(err as Error).message}`));
  }
}

export function getReads(remote: Remote, creds: ApiCredentials): ClusterReads {
  return {
    nodes: async () => (await get<{ items?: V1Node[] }>(remote, creds, '/api/v1/nodes', 'k3s kubectl get nodes -o json')).items ?? [],
    node: (name) => get<V1Node | undefined>(remote, creds, `/api/v1/nodes/${name}`, `k3s kubectl get node ${name} -o json`, true),
    lease: (namespace, name) =>
      get<V1Lease>(
        remote,
        creds,
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
        `k3s kubectl get lease -n ${namespace} ${name} -o json`,
      ),
    pods: async (namespace, labelSelector) =>
      (
        await get<{ items?: V1Pod[] }>(
          remote,
          creds,
          `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(labelSelector)}`,
          `k3s kubectl get pods -n ${namespace} -l ${labelSelector} -o json`,
        )
      ).items ?? [],
    deployment: (namespace, name) =>
      get<V1Deployment | undefined>(
        remote,
        creds,
        `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
        `k3s kubectl get deployment -n ${namespace} ${name} -o json`,
        true,
      ),
  };
}
