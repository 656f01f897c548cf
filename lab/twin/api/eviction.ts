// POST pods/<name>/eviction: kube-apiserver's EvictionREST.Create (kubernetes/kubernetes, tag unverified,
// read from a copy carrying v1.32's ignoreStoreReadErrorWithClusterBreakingPotential check:
// pkg/registry/core/pod/storage/eviction.go), in its words:
//   - a pod that is Succeeded, Failed, Pending or already deleting is deleted without a budget (canIgnorePDB);
//   - more than one matching budget: a failure Status, code 500, which the handler's finishRequest turns into
//     the error it sends (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go finishRequest);
//   - a pod that is not Ready is deleted without using the budget when the budget's policy is AlwaysAllow, or
//     (IfHealthyBudget, the default) while currentHealthy >= desiredHealthy > 0;
//   - checkAndDecrement: a budget whose status is older than its generation → 429 with retryAfterSeconds 10
//     ("is still being processed by the server"); disruptionsAllowed < 0 or too many disruptedPods → 403;
//     disruptionsAllowed 0 → 429 "needs %d healthy pods and has %d currently"; otherwise disruptionsAllowed − 1
//     and the pod in disruptedPods, written with the budget's resourceVersion (a conflict re-reads it, as
//     EvictionsRetry does, 20 times) — so a second eviction at once sees one disruption fewer;
//   - then the pod is deleted and the answer is Status Success, code 201 (handlers/create.go: a Status
//     without a code gets http.StatusCreated).
import { BUILTIN } from './resources.ts';
import { ApiError, badRequest } from './status.ts';
import type { ObjectStore } from './store.ts';
import { podReady, podsOfBudget, withDisruptionAllowed } from './disruption-budget.ts';

const PODS = BUILTIN.find((r) => r.resource === 'pods')!;
const PDBS = BUILTIN.find((r) => r.resource === 'poddisruptionbudgets')!;

/** eviction.go MaxDisruptedPodSize. */
const MAX_DISRUPTED_POD_SIZE = 2000;
/** eviction.go EvictionsRetry: 20 steps. */
const EVICTION_RETRIES = 20;

const EVICTION_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget.";
const MULTIPLE_BUDGETS = 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.';

/** apierrors.NewTooManyRequests with the DisruptionBudget cause (policyv1.DisruptionBudgetCause); StatusCause.Type is sent as `reason`. */
const tooManyRequests = (cause: string, retryAfterSeconds: number) =>
  new ApiError(429, 'TooManyRequests', EVICTION_REFUSED, {
    causes: [{ reason: 'DisruptionBudget', message: cause }],
    ...(retryAfterSeconds ? { retryAfterSeconds } : {}),
  });

/** apierrors.NewForbidden(policy.Resource("poddisruptionbudget"), name, err). */
const forbidden = (name: string, why: string) =>
  new ApiError(403, 'Forbidden', `poddisruptionbudget.policy "${name}" is forbidden: ${why}`, { name, group: 'policy', kind: 'poddisruptionbudget' });

/** The Status an eviction that went through answers with (HTTP 201). */
export const EVICTED = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };

const canIgnoreBudget = (pod: any) => ['Succeeded', 'Failed', 'Pending'].includes(pod.status?.phase) || Boolean(pod.metadata?.deletionTimestamp);

/**
 * Evicts `ns/name` as the body (a policy/v1 or v1beta1 Eviction) asks; throws the ApiError the apiserver
 * would send. `deletePod` deletes as the API's DELETE does; with `dryRun` nothing is written.
 */
export async function evict(
  store: Pick<ObjectStore, 'get' | 'list' | 'update'>,
  ns: string,
  name: string,
  body: any,
  deletePod: () => Promise<unknown>,
  dryRun = false,
): Promise<typeof EVICTED> {
  if (body?.kind && body.kind !== 'Eviction') throw badRequest(`not a Eviction object: ${body.kind}`);
  if ((body?.metadata?.name ?? '') !== name) throw badRequest('name in URL does not match name in Eviction object');
  const dry = dryRun || (body?.deleteOptions?.dryRun ?? []).includes('All');
  const pod = await store.get(PODS, ns, name);
  const remove = async () => {
    if (!dry) await deletePod();
    return EVICTED;
  };
  if (canIgnoreBudget(pod)) return remove();
  const budgets = podsBudgets(pod, (await store.list(PDBS, ns)).items);
  if (budgets.length > 1) throw new ApiError(500, '', MULTIPLE_BUDGETS);
  if (budgets.length === 0) return remove();
  let pdb = budgets[0];
  if (!podReady(pod)) {
    if (pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow') return remove();
    const s = pdb.status ?? {};
    if ((s.currentHealthy ?? 0) >= (s.desiredHealthy ?? 0) && (s.desiredHealthy ?? 0) > 0) return remove();
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await checkAndDecrement(store, pdb, name, dry);
      break;
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      // apierrors.NewTimeoutError(…, 10) once the retries are spent.
      if (attempt + 1 >= EVICTION_RETRIES)
        throw new ApiError(504, 'Timeout', `Timeout: couldn't update PodDisruptionBudget "${pdb.metadata.name}" due to conflicts`, { retryAfterSeconds: 10 });
      pdb = await store.get(PDBS, ns, pdb.metadata.name);
    }
  }
  return remove();
}

/** getPodDisruptionBudgets: the budgets of the pod's namespace whose selector matches it. */
const podsBudgets = (pod: any, budgets: any[]) => budgets.filter((b) => podsOfBudget(b, [pod]).length > 0);

async function checkAndDecrement(store: Pick<ObjectStore, 'update'>, pdb: any, podName: string, dryRun: boolean): Promise<void> {
  const s = pdb.status ?? {};
  const name = pdb.metadata.name;
  if ((s.observedGeneration ?? 0) < (pdb.metadata.generation ?? 1))
    throw tooManyRequests(`The disruption budget ${name} is still being processed by the server.`, 10);
  const allowed = Number(s.disruptionsAllowed ?? 0);
  if (allowed < 0) throw forbidden(name, 'pdb disruptions allowed is negative');
  if (Object.keys(s.disruptedPods ?? {}).length > MAX_DISRUPTED_POD_SIZE)
    throw forbidden(name, 'DisruptedPods map too big - too many evictions not confirmed by PDB controller');
  if (allowed === 0)
    throw tooManyRequests(`The disruption budget ${name} needs ${s.desiredHealthy ?? 0} healthy pods and has ${s.currentHealthy ?? 0} currently`, 0);
  if (dryRun) return;
  let status = { ...s, disruptionsAllowed: allowed - 1 };
  if (status.disruptionsAllowed === 0) status = withDisruptionAllowed(status);
  status.disruptedPods = { ...(s.disruptedPods ?? {}), [podName]: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
  await store.update(PDBS, pdb.metadata.namespace, name, { status }, { onlyStatus: true, expectedRV: pdb.metadata.resourceVersion });
}
