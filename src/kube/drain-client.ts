// The drain's API calls (src/k3s/drain.ts DrainApi) made with @kubernetes/client-node's CoreV1Api. An
// eviction the API refuses comes back as its status, message and causes (the 429 of a PodDisruptionBudget
// names the budget in its causes); any other failure is a KUBE_API_FAILED naming the request, the HTTP status
// and the API's message, or the transport's error when no answer came.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { forwardFailure } from './api-access.ts';
import { apiFailure, failedAs } from './api-failure.ts';
import { CORDONED_BY, type DrainApi, type EvictOutcome, type NodeSeen, type PodRef, type PodSeen } from '../k3s/drain.ts';

function podSeen(p: V1Pod): PodSeen {
  const controller = p.metadata?.ownerReferences?.find((r) => r.controller);
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    ...(p.metadata?.uid && { uid: p.metadata.uid }),
    ...(p.status?.phase && { phase: p.status.phase }),
    ...(controller && { controllerKind: controller.kind }),
    mirror: p.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined,
  };
}

/** DrainApi over the Kubernetes API that `kc` reaches (src/kube/api-access.ts clusterApi). */
export function clientDrainApi(kc: KubeConfig): DrainApi {
  const core = kc.makeApiClient(CoreV1Api);
  const failed = (request: string, at: { node?: string; command: string }, err: unknown) => failedAs(request, at, err, forwardFailure(kc));
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const call = async <T>(request: string, node: string, f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (err) {
      throw failed(request, { node, command: `k3s kubectl get node ${node} -o yaml` }, err);
    }
  };

  return {
    async readNode(node): Promise<NodeSeen> {
      const n = await call(`GET /api/v1/nodes/${node}`, node, () => core.readNode({ name: node }));
      const mark = n.metadata?.annotations?.[CORDONED_BY];
      return { unschedulable: n.spec?.unschedulable === true, ...(mark !== undefined && { cordonedBy: mark }) };
    },

    async setUnschedulable(node, on, cordonedBy) {
      const body = { spec: { unschedulable: on }, metadata: { annotations: { [CORDONED_BY]: cordonedBy } } };
      await call(`PATCH /api/v1/nodes/${node}`, node, () => core.patchNode({ name: node, body }, mergePatch));
    },

    async podsOn(node) {
      const list = await call(`GET /api/v1/pods?fieldSelector=spec.nodeName=${node}`, node, () =>
        core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
      );
      return list.items.map(podSeen);
    },

    async evict(pod: PodRef): Promise<EvictOutcome> {
      const { name, namespace } = pod;
      try {
        await core.createNamespacedPodEviction({ name, namespace, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } });
        return { ok: true };
      } catch (err) {
        const f = apiFailure(err);
        if (!f) throw failed(`POST /api/v1/namespaces/${namespace}/pods/${name}/eviction`, { command: `k3s kubectl -n ${namespace} get pod ${name}` }, err);
        return { ok: false, ...f };
      }
    },

    async podGone(pod) {
      const { name, namespace } = pod;
      try {
        const now = await core.readNamespacedPod({ name, namespace });
        return pod.uid !== undefined && now.metadata?.uid !== undefined && now.metadata.uid !== pod.uid;
      } catch (err) {
        if (apiFailure(err)?.status === 404) return true;
        throw failed(`GET /api/v1/namespaces/${namespace}/pods/${name}`, { command: `k3s kubectl -n ${namespace} get pod ${name}` }, err);
      }
    },
  };
}
