// The reads of the cluster that verify judges (phases/verify/read.ts), made with @kubernetes/client-node's
// typed APIs through the Kubernetes API that `kc` reaches (src/kube/api-access.ts clusterApi): one request
// each, answered within READ_TIMEOUT_MS or abandoned, a failure named as the drain's are (KUBE_API_FAILED with
// the request, or the SSH connection's SSH_FORWARD_FAILED when it could not be forwarded).
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  Observable,
  type KubeConfig,
  type RequestContext,
  type ResponseContext,
  type V1Deployment,
  type V1Lease,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { forwardFailure } from './api-access.ts';
import { apiFailure, failedAs } from './drain-client.ts';

/** What verify reads; the objects as the API holds them (the JSON of `kubectl get -o json`, times as Dates). */
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

/** Each request aborted once READ_TIMEOUT_MS have passed (client-node's requests take an AbortSignal). */
const bounded = {
  middleware: [
    {
      pre: (request: RequestContext) => {
        request.setSignal(AbortSignal.timeout(READ_TIMEOUT_MS));
        return new Observable(Promise.resolve(request));
      },
      post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
    },
  ],
  middlewareMergeStrategy: 'append' as const,
};

export function clusterReads(kc: KubeConfig): ClusterReads {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  /** `command`: what the operator runs on a server to see the same. */
  const call = async <T>(request: string, command: string, f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (err) {
      throw failedAs(request, { command }, err, forwardFailure(kc));
    }
  };
  return {
    nodes: async () => (await call('GET /api/v1/nodes', 'k3s kubectl get nodes -o json', () => core.listNode({}, bounded))).items,
    node: (name) =>
      call(`GET /api/v1/nodes/${name}`, `k3s kubectl get node ${name} -o json`, () =>
        core.readNode({ name }, bounded).catch((err: unknown) => {
          if (apiFailure(err)?.status === 404) return undefined;
          throw err;
        }),
      ),
    lease: (namespace, name) =>
      call(`GET /apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`, `k3s kubectl get lease -n ${namespace} ${name} -o json`, () =>
        coordination.readNamespacedLease({ namespace, name }, bounded),
      ),
    pods: async (namespace, labelSelector) =>
      (
        await call(
          `GET /api/v1/namespaces/${namespace}/pods?labelSelector=${labelSelector}`,
          `k3s kubectl get pods -n ${namespace} -l ${labelSelector} -o json`,
          () => core.listNamespacedPod({ namespace, labelSelector }, bounded),
        )
      ).items,
    deployment: (namespace, name) =>
      call(`GET /apis/apps/v1/namespaces/${namespace}/deployments/${name}`, `k3s kubectl get deployment -n ${namespace} ${name} -o json`, () =>
        apps.readNamespacedDeployment({ namespace, name }, bounded).catch((err: unknown) => {
          if (apiFailure(err)?.status === 404) return undefined;
          throw err;
        }),
      ),
  };
}
