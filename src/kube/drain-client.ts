// The drain's API calls (src/k3s/drain.ts DrainApi) made with @kubernetes/client-node's CoreV1Api. An
// eviction the API refuses comes back as its status, message and causes (the 429 of a PodDisruptionBudget
// names the budget in its causes); any other failure is a KUBE_API_FAILED naming the request, the HTTP status
// and the API's message, or the transport's error when no answer came.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { CauseError } from '../errors.ts';
import { forwardFailure } from './api-access.ts';
import { CORDONED_BY, type DrainApi, type EvictOutcome, type NodeSeen, type PodRef, type PodSeen, type StatusCause } from '../k3s/drain.ts';

/** What an HTTP failure of the client says: its status, and the Status object's message and causes. */
export interface ApiFailure {
  status: number;
  message: string;
  causes: StatusCause[];
}

/**
 * The HTTP status and Status body of a client error, or undefined when no HTTP answer came. client-node 1.x
 * throws an ApiException whose `body` is the response text (a JSON Status), an object, or undefined (401).
 */
export function apiFailure(err: unknown): ApiFailure | undefined {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object' || typeof e.code !== 'number' || !('body' in e)) return undefined;
  let body: unknown = e.body;
  if (typeof body === 'string') {
    const text = body;
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text.trim().slice(0, 500) };
    }
  }
  const status = (body && typeof body === 'object' ? body : {}) as { message?: unknown; reason?: unknown; details?: { causes?: unknown } };
  const causes = Array.isArray(status.details?.causes)
    ? (status.details.causes as unknown[]).flatMap((c) => {
        if (!c || typeof c !== 'object') return [];
        // metav1.StatusCause's Type travels as "reason" on the wire.
        const { reason, message } = c as Record<string, unknown>;
        const type = reason ?? (c as Record<string, unknown>).type;
        return [{ ...(typeof type === 'string' && { type }), ...(typeof message === 'string' && { message }) }];
      })
    : [];
  const message = typeof status.message === 'string' && status.message ? status.message : typeof status.reason === 'string' ? status.reason : httpWords(e.code);
  return { status: e.code, message, causes };
}

function httpWords(code: number): string {
  return code === 401 ? 'Unauthorized' : code === 403 ? 'Forbidden' : code === 404 ? 'Not Found' : `HTTP ${code}`;
}

/**
 * The CauseError of a request that failed: its HTTP status and message, or no answer at all — then the SSH
 * connection's refusal to forward it (SSH_FORWARD_FAILED) when that is why.
 */
export function failedAs(request: string, at: { node?: string; command: string }, err: unknown, forward?: unknown): CauseError {
  if (err instanceof CauseError) return err;
  const f = apiFailure(err);
  if (!f && forward instanceof CauseError) return forward;
  const seen = f ? `${request}: HTTP ${f.status} ${f.message}` : `${request}: no answer: ${(err as Error)?.message ?? String(err)}`;
  return new CauseError('KUBE_API_FAILED', {
    host: at.node,
    message: f ? `the Kubernetes API answered HTTP ${f.status} to ${request}: ${f.message}` : `no answer from the Kubernetes API to ${request}`,
    cause: err,
    evidence: {
      command: at.command,
      seen,
      excerpt: f?.causes.map((c) => `${c.type ?? ''}: ${c.message ?? ''}`).join('\n') || undefined,
    },
  });
}

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
