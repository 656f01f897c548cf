// The bounded waits of the flux phase, read live through `k3s kubectl` on the founder: Flux's sources and
// Kustomizations Ready (else the ROOT cause, root-cause.ts), then the HelmRelease that owns Cilium Ready.
// Only Stalled ends a wait early: Flux writes it (with observedGeneration) when it will not retry the
// generation. Any other Ready=False may still clear — a dependency turns Ready, a retry, a health check
// that is still inside its own timeout — so the wait goes on to its budget and then names the last
// reason and message it saw (for a health check still running, the objects it waits for that are not ready).
// Before either and at every look, the controllers' pods: one crash-looping is named at once (controllers.ts),
// as is, on an air-gapped site, one whose image is on no node.
import { podsPullCause } from '../../src/images/pods.ts';
import { CauseError, CauseErrors, stopOf } from '../../src/errors.ts';
import { withDeadline } from '../../src/util/deadline.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { refusedNotFound } from '../../src/k3s/remote.ts';
import { poll } from '../../src/engine/poll.ts';
import { applyFailed } from '../../src/engine/apply.ts';
import { apiPatch, apiRead, apiReadLists } from '../../src/kube/api-read.ts';
import { controllerCrashLoop, readControllers } from './controllers.ts';
import { healthTargets, notReadyText, targetReads } from './health-targets.ts';
import {
  awaitingApplier,
  describeObject,
  fluxState,
  isReady,
  literalVariables,
  readyCondition,
  REQUESTED_AT,
  servesRevision,
  stalledCondition,
  upToDate,
  type FluxObject,
  type FluxVerdict,
} from './root-cause.ts';

/** The longest pause between two looks of a Flux wait. */
export const FLUX_POLL_MAX_MS = 3_000;
// Quick looks first (a converged rerun only waits for the controllers to answer its request), then slower.
const pollMs = (n: number) => (n < 10 ? 1_000 : FLUX_POLL_MAX_MS);
/** The kinds the wait reads and asks to reconcile: source-controller's and kustomize-controller's, at v1 (fluxcd/source-controller api/v1, fluxcd/kustomize-controller api/v1). */
const FLUX_KINDS: Record<string, { group: string; plural: string }> = {
  GitRepository: { group: 'source.toolkit.fluxcd.io', plural: 'gitrepositories' },
  Kustomization: { group: 'kustomize.toolkit.fluxcd.io', plural: 'kustomizations' },
};
export const LIST = `get ${Object.values(FLUX_KINDS)
  .map((k) => `${k.plural}.${k.group}`)
  .join(',')} -A -o json`;
/** LIST's two reads of the API. */
const FLUX_LISTS = Object.entries(FLUX_KINDS).map(([kind, k]) => ({ path: `/apis/${k.group}/v1/${k.plural}`, kind }));

/** The gates' budget for Flux Ready, and the default of flux.waitSeconds. */
export const FLUX_WAIT_MAX_MS = 300_000;

/** The wait for Flux Ready this inventory asks for (flux.waitSeconds), within the gate's budget. */
export const fluxWaitMs = (ctx: Pick<ReadContext, 'inventory'>) =>
  Math.min(FLUX_WAIT_MAX_MS, (ctx.inventory.inventory.flux?.waitSeconds ?? FLUX_WAIT_MAX_MS / 1000) * 1000);

/** `signal` ended also at flux.waitSeconds. */
export const fluxWaitSignal = (ctx: RunContext, signal: AbortSignal) => withDeadline(signal, fluxWaitMs(ctx));

export interface NamedObject {
  name: string;
  namespace: string;
}

async function listFlux(ctx: RunContext, host: HostRef): Promise<{ sources: FluxObject[]; kustomizations: FluxObject[] } | undefined> {
  const res = await apiReadLists(ctx, host, { lists: FLUX_LISTS, kubectl: LIST }).catch(() => undefined);
  if (!res || res.code !== 0) return undefined;
  const items = (JSON.parse(res.stdout).items ?? []) as FluxObject[];
  return { sources: items.filter((i) => i.kind === 'GitRepository'), kustomizations: items.filter((i) => i.kind === 'Kustomization') };
}

function verdictError(v: FluxVerdict, command = `kubectl ${LIST.replace(' -o json', '')}`): CauseError {
  const seen = v.causeId === 'FLUX_DEPENDENCY_NOT_READY' ? v.message : `${v.object} is not Ready: ${v.reason}: ${v.message}`;
  return new CauseError(v.causeId, { message: `${v.object}: ${v.reason}: ${v.message}`, evidence: { command, seen } });
}

function verdictsError(vs: FluxVerdict[]): CauseError | CauseErrors {
  const errors = vs.map((v) => verdictError(v));
  return stopOf(errors);
}

/** For each Kustomization whose health checks run, the objects they wait for that are not ready (read at once, through the API). */
async function healthDetails(ctx: RunContext, host: HostRef, verdicts: FluxVerdict[], kustomizations: FluxObject[]): Promise<FluxVerdict[]> {
  const out: FluxVerdict[] = [];
  for (const v of verdicts) {
    const k = v.reason === 'HealthCheckRunning' ? kustomizations.find((x) => describeObject('Kustomization', x) === v.object) : undefined;
    const targets = k ? healthTargets(k) : [];
    if (!targets.length) {
      out.push(v);
      continue;
    }
    const answers = await Promise.all(targetReads(targets).map((r) => apiRead(ctx, host, r).catch(() => undefined)));
    const found = answers.flatMap((res) => (res?.code === 0 && res.stdout.trim() ? [JSON.parse(res.stdout)] : []));
    const pending = notReadyText(targets, found);
    out.push(pending.length ? { ...v, message: `${v.message}; not ready: ${pending.join(', ')}` } : v);
  }
  return out;
}

/** A listed Flux object's path in the API and its kubectl name. */
function fluxObjectRef(o: FluxObject): { path: string; kubectl: string } {
  const { name, namespace } = o.metadata;
  const { group, plural } = FLUX_KINDS[o.kind === 'GitRepository' ? 'GitRepository' : 'Kustomization'];
  return { path: `/apis/${group}/v1/namespaces/${namespace}/${plural}/${name}`, kubectl: `${plural}.${group}/${name} -n ${namespace}` };
}

/**
 * Asks the controllers to reconcile `objects` now, as `flux reconcile kustomization --with-source` does, so
 * the wait judges the branch's head and not a status from before this run (a new deploy key, a new revision):
 * the request annotation on each, a JSON merge patch through the Kubernetes API (`k3s kubectl annotate` on the
 * server without a kubeconfig), all at once. Harmless to repeat: it changes no spec, only the request token the
 * controllers answer. An object pruned since it was listed (a Kustomization the revision just applied no longer
 * holds) is a NotFound for it alone: nothing is left to ask of it, and the wait's next list no longer shows it.
 */
async function requestReconcile(ctx: RunContext, host: HostRef, objects: FluxObject[], token: string): Promise<void> {
  const answers = await Promise.all(
    objects.map(async (o) => {
      const ref = fluxObjectRef(o);
      const kubectl = `annotate --overwrite ${ref.kubectl} ${REQUESTED_AT}=${token}`;
      const patch = { metadata: { annotations: { [REQUESTED_AT]: token } } };
      return { kubectl, res: await apiPatch(ctx, host, { path: ref.path, type: 'merge', patch, verb: 'annotated', kubectl }) };
    }),
  );
  const failed = answers.find((a) => a.res.code !== 0 && !refusedNotFound(a.res));
  // The same evidence as any other change that failed on a host (src/engine/apply.ts).
  if (failed) throw applyFailed(host.name, `kubectl ${failed.kubectl}`, failed.res.code, failed.res.stderr.trim());
}

/**
 * One look at Flux's controllers: a crash-looping one is thrown at once; the image a pod cannot pull is
 * returned (thrown by the caller at once on an air-gapped site, else when the budget ends: a registry may recover).
 */
async function lookAtControllers(ctx: RunContext, host: HostRef): Promise<ReturnType<typeof podsPullCause>> {
  const seen = await readControllers(ctx, host);
  if (!seen) return undefined;
  const crash = await controllerCrashLoop(ctx, host, seen.pods, seen.deployments);
  if (crash) throw crash;
  const pull = podsPullCause(ctx, seen.pods);
  if (pull?.decided) throw pull.cause;
  return pull;
}

/**
 * The pause while a converged cluster's sources answer their fetch request (a fetch of an unmoved branch is
 * quick), for the first few looks; then the wait's usual pace (a source that does not answer is waited for as before).
 */
const SOURCE_ANSWER_POLL_MS = 250;
const SOURCE_ANSWER_QUICK_LOOKS = 8;

/**
 * Resolves when every GitRepository and Kustomization is Ready; throws the root causes otherwise.
 *
 * It reads first. When `checkout` is given (the GitRepository the flux phase applies and the revision the
 * operator's checkout holds: checkout-revision.ts; the caller gives none when this run applied anything of
 * Flux, e.g. a new deploy key, which no status shows) and that source already serves it with everything current
 * (servesRevision in root-cause.ts), it passes at once: no request, no pause. The run renders from the
 * checkout and pushes nothing, so a branch that moved elsewhere since is not what this run proves (the
 * source fetches it within its interval, and the next run sees a revision that is not the checkout's).
 *
 * Otherwise, when something is not current (upToDate in root-cause.ts: a new generation, a source revision
 * not applied yet, a failure, an unanswered request), it asks every source and Kustomization to reconcile at
 * once, as it always did. When everything is current but the checkout cannot tell (no `checkout`) or the
 * source serves another revision than the checkout, it asks the sources alone: a GitRepository's status
 * only says what the branch held at its last fetch (every spec.interval, 1m here), so Ready there cannot
 * tell a push of a minute ago, and this run cannot either (Flux owns the repository; the run pushes nothing). Without that fetch a rerun after a push would pass on the old
 * revision, and the parity check after it would compare the old HelmRelease with the new checkout
 * (CILIUM_PARITY_DRIFT that is not one); nor would a deploy key this run replaced be proven. The fetch is
 * cheap: source-controller compares the remote head with its artifact and stops there when they match
 * (fluxcd/source-controller v1.9.0, internal/controller/gitrepository_controller.go, reconcileSource's
 * optimized clone). Once every source has answered, the same revision with everything still current passes
 * without asking the Kustomizations (their build, apply and health checks were the rest of the wait);
 * anything else asks them, as before, and the wait goes on.
 */
export async function waitFluxReady(ctx: RunContext, host: HostRef, signal: AbortSignal, checkout?: { source: NamedObject; revision: string }): Promise<void> {
  // First the controllers: a reconcile request to one that cannot run is never answered. The list is read
  // beside them (one round trip, not two); it is judged only once they are.
  const listed = listFlux(ctx, host);
  let pull = await lookAtControllers(ctx, host).catch(async (err) => {
    await listed.catch(() => undefined);
    throw err;
  });
  const token = new Date(ctx.clock.now()).toISOString();
  const before = await listed;
  if (before && checkout && servesRevision(before.sources, before.kustomizations, checkout.source, checkout.revision)) return;
  // Whether the Kustomizations were asked too (else only the sources, and the wait looks for their answer first).
  let allAsked = !before || !upToDate(before.sources, before.kustomizations);
  if (before) await requestReconcile(ctx, host, allAsked ? [...before.sources, ...before.kustomizations] : before.sources, token);
  let last: FluxVerdict[] = [];
  const ready = await poll(ctx, signal, {
    everyMs: (n) => (!allAsked && n < SOURCE_ANSWER_QUICK_LOOKS ? SOURCE_ANSWER_POLL_MS : pollMs(n)),
    look: async (attempt) => {
      // After each pause, the controllers again (the first look was before the reconcile request).
      if (attempt > 0) pull = await lookAtControllers(ctx, host);
      const seen = await listFlux(ctx, host);
      if (seen) {
        if (!allAsked && seen.sources.every((s) => s.status?.lastHandledReconcileAt === token)) {
          if (upToDate(seen.sources, seen.kustomizations)) return true;
          allAsked = true;
          await requestReconcile(ctx, host, seen.kustomizations, token);
          return undefined;
        }
        const state = fluxState(seen.sources, seen.kustomizations);
        if (state.ready && seen.sources.length && seen.kustomizations.length) return true;
        last = state.ready ? [] : state.verdicts;
        // A Stalled object its applier may yet prune (gone from the revision just pushed) is not the answer yet.
        const pending = awaitingApplier(seen.sources, seen.kustomizations);
        const stalled = last.filter((v) => v.stalled && !pending.has(v.object));
        if (stalled.length) throw verdictsError(stalled);
        if (last.some((v) => v.reason === 'HealthCheckRunning')) last = await healthDetails(ctx, host, last, seen.kustomizations);
      }
      return undefined;
    },
  });
  if (ready) return;
  ctx.signal.throwIfAborted();
  if (pull) throw pull.cause;
  if (last.length) throw verdictsError(last);
  const seen = 'no GitRepository or Kustomization of Flux was seen Ready within the budget (the Flux controllers may not run)';
  throw new CauseError('FLUX_RECONCILIATION_FAILED', { message: seen, evidence: { command: `kubectl ${LIST}`, seen } });
}

/** The HelmRelease's read: its path in the API (helm-controller's v2 kind) and the same read as kubectl arguments. */
export const helmReleaseRead = (hr: NamedObject) => ({
  path: `/apis/helm.toolkit.fluxcd.io/v2/namespaces/${hr.namespace}/helmreleases/${hr.name}`,
  kubectl: `get helmreleases.helm.toolkit.fluxcd.io -n ${hr.namespace} ${hr.name} -o json`,
});

/** Resolves with the live HelmRelease once it is Ready for its current generation. */
export async function waitHelmReleaseReady(ctx: RunContext, host: HostRef, hr: NamedObject, signal: AbortSignal): Promise<any> {
  const read = helmReleaseRead(hr);
  const command = read.kubectl;
  const what = describeObject('HelmRelease', { metadata: hr });
  let seen = `${what} does not exist: the Kustomizations of gitops.path did not apply it`;
  const ready = await poll<{ ready: any } | { stalled: true }>(ctx, signal, {
    everyMs: pollMs,
    look: async () => {
      const res = await apiRead(ctx, host, read).catch(() => undefined);
      // helm-controller crash-looping answers nothing: named at once (a Ready release needs no controller to prove it).
      if (res?.code !== 0 || !isReady(JSON.parse(res.stdout))) await lookAtControllers(ctx, host);
      if (res?.code === 0) {
        const obj = JSON.parse(res.stdout);
        const literal = literalVariables(obj.spec?.values ?? {});
        if (literal.length) {
          const s = `${what} holds ${literal.map((l) => `spec.values.${l.path}: ${JSON.stringify(l.text)}`).join(', ')} literally: no substitution ran for it`;
          throw new CauseError('FLUX_SUBSTITUTION_FAILED', { message: s, evidence: { command: `kubectl ${command}`, seen: s } });
        }
        if (isReady(obj)) return { ready: obj };
        const c = readyCondition(obj);
        seen = `${what} is not Ready: ${c?.reason ?? 'NoReadyCondition'}: ${c?.message ?? 'the helm-controller has not reconciled it yet'}`;
        // Stalled (e.g. RetriesExceeded once an install or upgrade failed with no remediation retries left).
        const stalled = stalledCondition(obj);
        if (stalled) {
          seen = `${seen} (Stalled: ${stalled.reason}: ${stalled.message}; the helm-controller will not retry this generation)`;
          return { stalled: true };
        }
      }
      return undefined;
    },
  });
  if (ready && 'ready' in ready) return ready.ready;
  ctx.signal.throwIfAborted();
  throw new CauseError('FLUX_HELMRELEASE_NOT_READY', { message: seen, evidence: { command: `kubectl ${command}`, seen } });
}
