// The bounded waits of the flux phase, read live through `k3s kubectl` on the founder: Flux's sources and
// Kustomizations Ready (else the ROOT cause, root-cause.ts), then the HelmRelease that owns Cilium Ready.
// A failure the controller reports for the current generation ends the wait once seen twice in a row:
// Flux retries only at the object's interval, so waiting longer cannot help.
import { CauseError, CauseErrors } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { kubectl, pause } from '../k3s/remote-k3s.ts';
import { describeObject, fluxState, isReady, literalVariables, readyCondition, REQUESTED_AT, type FluxObject, type FluxVerdict } from './root-cause.ts';

/** A HelmRelease's Ready reason that names a failure (`InstallFailed`, `UpgradeFailed`, …). */
export const FAILED_REASON = /Failed$/;

// Quick looks first (a converged rerun only waits for the controllers to answer its request), then slower.
const pollMs = (n: number) => (n < 10 ? 1_000 : 3_000);
const LIST = 'get gitrepositories.source.toolkit.fluxcd.io,kustomizations.kustomize.toolkit.fluxcd.io -A -o json';

export interface NamedObject {
  name: string;
  namespace: string;
}

async function listFlux(ctx: RunContext, host: HostRef): Promise<{ sources: FluxObject[]; kustomizations: FluxObject[] } | undefined> {
  const res = await kubectl(ctx, host, LIST).catch(() => undefined);
  if (!res || res.code !== 0) return undefined;
  const items = (JSON.parse(res.stdout).items ?? []) as FluxObject[];
  return { sources: items.filter((i) => i.kind === 'GitRepository'), kustomizations: items.filter((i) => i.kind === 'Kustomization') };
}

export function verdictError(v: FluxVerdict, command = `kubectl ${LIST.replace(' -o json', '')}`): CauseError {
  const seen = v.causeId === 'FLUX_DEPENDENCY_NOT_READY' ? v.message : `${v.object} is not Ready: ${v.reason}: ${v.message}`;
  return new CauseError(v.causeId, { message: `${v.object}: ${v.reason}: ${v.message}`, evidence: { command, seen } });
}

export function verdictsError(vs: FluxVerdict[]): CauseError | CauseErrors {
  const errors = vs.map((v) => verdictError(v));
  return errors.length === 1 ? errors[0] : new CauseErrors(errors);
}

const finalKey = (v: FluxVerdict) => `${v.causeId} ${v.object} ${v.reason} ${v.message}`;

/**
 * Asks the controllers to reconcile now, as `flux reconcile kustomization --with-source` does, so the wait
 * judges the branch's head and not a status from before this run (a new deploy key, a new revision).
 * Harmless to repeat: it changes no spec, only the request token the controllers answer.
 */
export async function requestReconcile(ctx: RunContext, host: HostRef): Promise<void> {
  const token = new Date(ctx.clock.now()).toISOString();
  const seen = await listFlux(ctx, host);
  if (!seen) return;
  // Per namespace: kubectl before 1.30 has no --all-namespaces for annotate.
  const targets = new Set([...seen.sources, ...seen.kustomizations].map((o) => `${o.kind === 'GitRepository' ? 'gitrepositories.source.toolkit.fluxcd.io' : 'kustomizations.kustomize.toolkit.fluxcd.io'} --all -n ${o.metadata.namespace}`));
  for (const t of targets) {
    const command = `annotate --overwrite ${t} ${REQUESTED_AT}=${token}`;
    const res = await kubectl(ctx, host, command);
    if (res.code !== 0) throw new CauseError('APPLY_FAILED', { host: host.name, evidence: { command: `kubectl ${command}`, exitCode: res.code, excerpt: res.stderr.trim().slice(-500) } });
  }
}

/** Resolves when every GitRepository and Kustomization is Ready; throws the root causes otherwise. */
export async function waitFluxReady(ctx: RunContext, host: HostRef, signal: AbortSignal): Promise<void> {
  await requestReconcile(ctx, host);
  let last: FluxVerdict[] = [];
  let previous = new Set<string>();
  let n = 0;
  do {
    const seen = await listFlux(ctx, host);
    if (seen) {
      const state = fluxState(seen.sources, seen.kustomizations);
      if (state.ready && seen.sources.length && seen.kustomizations.length) return;
      last = state.ready ? [] : state.verdicts;
      const finals = last.filter((v) => v.final);
      if (finals.length && finals.every((v) => previous.has(finalKey(v)))) throw verdictsError(finals);
      previous = new Set(finals.map(finalKey));
    }
  } while (await pause(ctx, pollMs(n++), signal));
  ctx.signal.throwIfAborted();
  if (last.length) throw verdictsError(last);
  const seen = 'no GitRepository or Kustomization of Flux was seen Ready within the budget (the Flux controllers may not run)';
  throw new CauseError('FLUX_RECONCILIATION_FAILED', { message: seen, evidence: { command: `kubectl ${LIST}`, seen } });
}

/** Resolves with the live HelmRelease once it is Ready for its current generation. */
export async function waitHelmReleaseReady(ctx: RunContext, host: HostRef, hr: NamedObject, signal: AbortSignal): Promise<any> {
  const command = `get helmreleases.helm.toolkit.fluxcd.io -n ${hr.namespace} ${hr.name} -o json`;
  const what = describeObject('HelmRelease', { metadata: hr });
  let seen = `${what} does not exist: the Kustomizations of gitops.path did not apply it`;
  let previous = '';
  let n = 0;
  do {
    const res = await kubectl(ctx, host, command).catch(() => undefined);
    if (res?.code === 0) {
      const obj = JSON.parse(res.stdout);
      const literal = literalVariables(obj.spec?.values ?? {});
      if (literal.length) {
        const s = `${what} holds ${literal.map((l) => `spec.values.${l.path}: ${JSON.stringify(l.text)}`).join(', ')} literally: no substitution ran for it`;
        throw new CauseError('FLUX_SUBSTITUTION_FAILED', { message: s, evidence: { command: `kubectl ${command}`, seen: s } });
      }
      if (isReady(obj)) return obj;
      const c = readyCondition(obj);
      seen = `${what} is not Ready: ${c?.reason ?? 'NoReadyCondition'}: ${c?.message ?? 'the helm-controller has not reconciled it yet'}`;
      const failed = c?.status === 'False' && FAILED_REASON.test(c.reason ?? '') && (obj.status?.observedGeneration ?? 0) >= (obj.metadata?.generation ?? 0);
      if (failed && previous === seen) break;
      previous = failed ? seen : '';
    }
  } while (await pause(ctx, pollMs(n++), signal));
  ctx.signal.throwIfAborted();
  throw new CauseError('FLUX_HELMRELEASE_NOT_READY', { message: seen, evidence: { command: `kubectl ${command}`, seen } });
}
