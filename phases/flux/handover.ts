// The hand-over of Cilium from the bootstrap's HelmChart to Flux's HelmRelease. The plan (what check mode
// shows), each change only when the probe says it is still needed:
//   1. remove the HelmChart manifest from the auto-deploy folder: k3s's deploy controller applies every file
//      there at its start and when it changes, and never deletes anything when a file goes
//      (k3s-io/k3s @0301210f pkg/deploy/controller.go: listFilesIn, deploy; only a disabled file is deleted),
//      so without the file nothing brings the chart back;
//   2. annotate the HelmChart `helmcharts.helm.cattle.io/unmanaged`: helm-controller's shouldManage is then
//      false for it, so neither its install nor its remove handler (helm uninstall) runs for it again;
//   3. take helm-controller's finalizer off: it is added while the chart is managed and removed only by the
//      remove handler, which no longer runs; left on, the deleted chart would stay Terminating forever, and
//      removing the annotation later would uninstall Cilium under Flux. Only after step 2: a managed chart
//      that loses its finalizer gets it back. No wait between: the controller's own writes carry the
//      resourceVersion it read, so a stale one is refused (409), never applied over the annotation;
//   4. delete it and wait until it is gone (HELMCHART_NOT_GONE when it is not within the budget).
// Before them, a first change of the plan (an action: it waits and reads, check mode shows what it runs)
// waits until Flux is Ready and its HelmRelease has adopted the release, then proves parity: same values,
// and the cilium DaemonSet's pod template did not roll. Only then does the HelmChart go: a drift stops the
// run there and keeps it, so nothing is lost.
import type { ActionContext, Change } from '../../src/engine/changes.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import { hostFact } from '../../src/engine/facts.ts';
import type { HostRef, Plan, Step } from '../../src/engine/phase.ts';
import { CauseError } from '../../src/errors.ts';
import { connectionLost } from '../../src/transport/lost.ts';
import { lastLines } from '../../src/util/text.ts';
import { shq } from '../../src/util/shell.ts';
import { HELMCHART_MANIFEST } from '../../src/k3s/helmchart.ts';
import { ciliumRelease, type CiliumRelease } from '../../src/gitops/cilium-release.ts';
import { rawGetProbe, refusedNotFound } from '../../src/k3s/remote.ts';
import { helmChartObject, helmChartPath, helmChartProbe, REMOVE_FINALIZER, UNMANAGED, type HelmChartObject } from '../../src/k3s/helmchart-object.ts';
import { apiDelete, apiRead, apiShown } from '../../src/kube/api-read.ts';
import { apiPatchChange } from '../../src/kube/api-change.ts';
import { poll } from '../../src/engine/poll.ts';
import { helmChartValues, rolled, valuesDiff } from './parity.ts';
import { appliesThisRun, FLUX_APPLY_STEPS } from './applied-step.ts';
import { checkoutRevision } from './checkout-revision.ts';
import { FLUX_NAMESPACE } from './controllers.ts';
import { SYNC_SOURCE } from './manifests.ts';
import { fluxWaitMs, fluxWaitSignal, helmReleaseRead, LIST, waitFluxReady, waitHelmReleaseReady } from './ready-wait.ts';
import { applyFailed } from '../../src/engine/apply.ts';
import { REQUESTED_AT } from './root-cause.ts';

/** How long the delete waits for the HelmChart to be gone, and how often it looks. */
const GONE_WAIT_S = 60;
const GONE_POLL_MS = 1_000;

/** What the hand-over reads of Cilium's release (src/gitops/cilium-release.ts): the HelmChart, the HelmRelease, the values. */
export type CiliumOwnership = Pick<CiliumRelease, 'helmChart' | 'helmRelease' | 'values'>;

/** The run's render of Cilium's release (the flux phase's prepare renders it, or the cilium phase's did). */
export const ownershipOf = (ctx: ReadContext): CiliumOwnership => ctx.facts.need(ciliumRelease);

/**
 * The cilium DaemonSet's template generation before anything of Flux ran (the install step's probe);
 * undefined when there was no DaemonSet to read: the roll check then has nothing to compare.
 */
export const ciliumGenerationBefore = hostFact<number | undefined>('ciliumGenerationBefore');

/**
 * The live cilium DaemonSet (read-only), for the roll check across the hand-over: its template generation
 * (the annotation `deprecated.daemonset.template.generation`) moves only when the pod template changes
 * (kubernetes/kubernetes @152b09ac pkg/registry/apps/daemonset/strategy.go PrepareForUpdate), which is what
 * rolls the agents; metadata.generation also moves for a new rollout width.
 */
const DAEMONSET_READ = { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium', kubectl: 'get daemonset -n kube-system cilium -o json' };
export const DAEMONSET_PROBE = rawGetProbe(DAEMONSET_READ.path);

/** The bootstrap's HelmChart read whole (its values): its path in the API and the same read as kubectl arguments. */
export const helmChartRead = (hc: { name: string; namespace: string }) => ({
  path: helmChartPath(hc),
  kubectl: `get helmchart.helm.cattle.io -n ${hc.namespace} ${hc.name} -o json`,
});
const TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

export function templateGenerationOf(stdout: string, code: number | null): number | undefined {
  if (code !== 0 || stdout.trim() === '') return undefined;
  const n = Number(JSON.parse(stdout).metadata?.annotations?.[TEMPLATE_GENERATION]);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * Pure: the hand-over's changes from what the probe saw (none once the HelmChart and its manifest are gone).
 * The chart's writes go through the Kubernetes API over the run's SSH connection to `via` (the step's host).
 */
export function handoverChanges(o: CiliumOwnership, seen: { helmChart?: HelmChartObject; manifest: boolean }, via: string): Change[] {
  const name = `HelmChart ${o.helmChart.namespace}/${o.helmChart.name}`;
  const hc = `-n ${o.helmChart.namespace} helmchart.helm.cattle.io/${o.helmChart.name}`;
  const path = helmChartPath(o.helmChart);
  const chart = seen.helmChart;
  const at = chart ? chart.finalizers.indexOf(REMOVE_FINALIZER) : -1;
  // The test keeps the removal from taking another finalizer off when the list changed since the probe read it.
  const patch = [
    { op: 'test', path: `/metadata/finalizers/${at}`, value: REMOVE_FINALIZER },
    { op: 'remove', path: `/metadata/finalizers/${at}` },
  ];
  return [
    ...(seen.manifest
      ? [
          {
            kind: 'command' as const,
            description: `remove ${HELMCHART_MANIFEST}: Flux owns Cilium from now on`,
            command: `rm -f ${shq(HELMCHART_MANIFEST)}`,
            sudo: true,
          },
        ]
      : []),
    ...(chart && !chart.unmanaged
      ? [
          apiPatchChange(
            `annotate ${name} ${UNMANAGED} (helm-controller leaves the release alone from now on)`,
            {
              path,
              type: 'merge',
              patch: { metadata: { annotations: { [UNMANAGED]: 'true' } } },
              verb: 'annotated',
              kubectl: `annotate --overwrite ${hc} ${UNMANAGED}=true`,
            },
            via,
          ),
        ]
      : []),
    ...(at >= 0
      ? [
          apiPatchChange(
            `take the finalizer ${REMOVE_FINALIZER} off ${name}: helm-controller no longer removes it from an unmanaged chart (the release stays)`,
            { path, type: 'json', patch, verb: 'patched', kubectl: `patch ${hc} --type=json -p ${shq(JSON.stringify(patch))}` },
            via,
          ),
        ]
      : []),
    ...(chart ? [deleteChange(o, name, hc, via)] : []),
  ];
}

/** The hand-over's first change: Flux Ready, its HelmRelease adopted the release, parity proven (CILIUM_PARITY_DRIFT otherwise). */
function adoptionChange(o: CiliumOwnership, waitMs: number, via: string): Change {
  const hr = `HelmRelease ${o.helmRelease.namespace}/${o.helmRelease.name}`;
  return {
    kind: 'action',
    description: `wait until Flux is Ready and ${hr} has adopted the release (at most ${waitMs / 1000} s), then prove parity: the same values, no roll of the cilium agents (a drift stops here, the HelmChart kept)`,
    runs: [
      `${apiShown('GET', helmChartRead(o.helmChart), via)}   (the values installed now)`,
      `${apiShown('GET', { path: `/api/v1/namespaces/${FLUX_NAMESPACE}/pods and /apis/apps/v1/namespaces/${FLUX_NAMESPACE}/deployments`, kubectl: `get pods,deployments -n ${FLUX_NAMESPACE} -o json` }, via)}   (at every poll: a crash-looping controller is named at once, with its log, GET …/pods/<pod>/log the same way)`,
      `${apiShown('PATCH', { path: '<each GitRepository and Kustomization>', patch: { metadata: { annotations: { [REQUESTED_AT]: '<now>' } } }, kubectl: `annotate --overwrite <each> ${REQUESTED_AT}=<now>` }, via)}   (a reconcile request, unless the source serves the checkout's commit and everything is current)`,
      `${apiShown('GET', { path: '/apis/source.toolkit.fluxcd.io/v1/gitrepositories and /apis/kustomize.toolkit.fluxcd.io/v1/kustomizations', kubectl: LIST }, via)}   (until Ready; the objects of a running health check read too)`,
      `${apiShown('GET', helmReleaseRead(o.helmRelease), via)}   (until Ready)`,
      `${apiShown('GET', DAEMONSET_READ, via)}   (its template generation, against the one before Flux's install)`,
    ],
    // No budget of its own here: the waits end at flux.waitSeconds (fluxWaitSignal) and name their cause.
    run: (ctx) => proveAdoption(ctx),
  };
}

/** The delete, waited for; running out is HELMCHART_NOT_GONE, with what still holds the chart (the last read). */
function deleteChange(o: CiliumOwnership, name: string, hc: string, via: string): Change {
  const del = { path: helmChartPath(o.helmChart), kubectl: `delete ${hc} --ignore-not-found --wait=false` };
  const read = { path: del.path, kubectl: `get ${hc} -o json --request-timeout=5s` };
  return {
    kind: 'action',
    description: `delete ${name} and wait until it is gone (at most ${GONE_WAIT_S} s): HelmRelease ${o.helmRelease.namespace}/${o.helmRelease.name} owns Cilium`,
    runs: [apiShown('DELETE', del, via), `every ${GONE_POLL_MS / 1000} s, at most ${GONE_WAIT_S} s, until it is not found: ${apiShown('GET', read, via)}`],
    run: async (ctx) => {
      const command = `DELETE ${del.path}; GET ${read.path} until it is not found`;
      const res = await apiDelete(ctx, ctx.host, del);
      if ('lost' in res && res.lost) throw connectionLost(ctx.host.name, command);
      if (res.code !== 0) throw applyFailed(ctx.host.name, command, res.code, res.stderr || res.stdout);
      // The API deletes at once what no finalizer holds; a held chart is marked and goes when its finalizers do.
      let last: Awaited<ReturnType<typeof apiRead>> | undefined;
      const gone = await poll(ctx, ctx.signal, {
        everyMs: GONE_POLL_MS,
        withinMs: GONE_WAIT_S * 1000,
        look: async () => {
          last = await apiRead(ctx, ctx.host, read).catch(() => undefined);
          return (last !== undefined && refusedNotFound(last)) || undefined;
        },
      });
      if (gone) return;
      const left = helmChartObject(last);
      const seen = left
        ? `HelmChart ${o.helmChart.namespace}/${o.helmChart.name} is still there ${left.deleting ? 'and Terminating' : 'and not marked for deletion'}, held by the finalizers [${left.finalizers.join(', ')}]`
        : `it could not be seen gone within ${GONE_WAIT_S} s${last ? `: ${lastLines(last.stderr || last.stdout, 1).trim()}` : ''}`;
      throw new CauseError('HELMCHART_NOT_GONE', {
        host: ctx.host.name,
        message: seen,
        evidence: { command, exitCode: last?.code ?? null, excerpt: res.stdout.trim(), seen },
      });
    },
  };
}

/** Pure: CILIUM_PARITY_DRIFT when the values differ or the agents rolled, else nothing. */
export function parityDrift(
  o: CiliumOwnership,
  bootstrapValues: unknown,
  whose: string,
  liveValues: unknown,
  ds?: { before?: number; after?: number },
): CauseError | undefined {
  const keys = valuesDiff(bootstrapValues, liveValues);
  const roll =
    ds &&
    rolled(ds.before === undefined ? undefined : { templateGeneration: ds.before }, ds.after === undefined ? undefined : { templateGeneration: ds.after });
  if (!keys.length && !roll) return undefined;
  const hr = `HelmRelease ${o.helmRelease.namespace}/${o.helmRelease.name}`;
  const parts = [
    keys.length ? `${hr} spec.values differ from ${whose} at ${keys.join(', ')}` : '',
    roll ? `the cilium DaemonSet rolled (template generation ${ds!.before} → ${ds!.after}): Flux upgraded the release with another pod template` : '',
  ].filter(Boolean);
  const seen = parts.join('; ');
  return new CauseError('CILIUM_PARITY_DRIFT', {
    message: seen,
    evidence: {
      command: `kubectl get helmrelease -n ${o.helmRelease.namespace} ${o.helmRelease.name} -o jsonpath={.spec.values}`,
      seen,
      excerpt: keys.map((k) => `${k}: bootstrap ${JSON.stringify(pick(bootstrapValues, k))}, Flux ${JSON.stringify(pick(liveValues, k))}`).join('\n'),
    },
  });
}

/** The value at a dotted path (as valuesDiff writes them), for the evidence. */
export function pick(v: unknown, path: string): unknown {
  if (path === '.') return v;
  let cur: any = v;
  for (const part of path.match(/[^.[\]]+/g) ?? []) cur = cur == null ? undefined : cur[/^\d+$/.test(part) ? Number(part) : part];
  return cur;
}

/** The live HelmRelease Ready, then parity against `reference` (the HelmChart's values, or the render). */
export async function checkAdoption(
  ctx: RunContext,
  host: HostRef,
  signal: AbortSignal,
  reference: { values: unknown; whose: string },
  ds?: { before?: number },
): Promise<void> {
  const o = ownershipOf(ctx);
  const revision = ctx.facts.run(checkoutRevision);
  // Statuses prove nothing this run applied (a new deploy key, install or sync spec): then a reconcile, as before.
  const applied = FLUX_APPLY_STEPS.some((id) => ctx.facts.get(host.name, appliesThisRun(id)) !== false);
  await waitFluxReady(ctx, host, signal, revision && !applied ? { source: SYNC_SOURCE, revision } : undefined);
  const hr = await waitHelmReleaseReady(ctx, host, o.helmRelease, signal);
  const after = ds ? templateGenerationOf(...(await readTemplateGeneration(ctx, host))) : undefined;
  const drift = parityDrift(o, reference.values, reference.whose, hr.spec?.values ?? {}, ds ? { before: ds.before, after } : undefined);
  if (drift) throw drift;
}

async function readTemplateGeneration(ctx: RunContext, host: HostRef): Promise<[string, number | null]> {
  const r = await apiRead(ctx, host, DAEMONSET_READ);
  return [r.stdout, r.code];
}

/** Flux Ready and the HelmRelease adopted, parity against what is installed: the HelmChart's values while it exists (else the render). */
async function proveAdoption(ctx: ActionContext): Promise<void> {
  const { host } = ctx;
  const o = ownershipOf(ctx);
  const signal = fluxWaitSignal(ctx, ctx.signal);
  const chart = await apiRead(ctx, host, helmChartRead(o.helmChart));
  const reference =
    chart.code === 0
      ? { values: helmChartValues(JSON.parse(chart.stdout)), whose: `the bootstrap's HelmChart ${o.helmChart.namespace}/${o.helmChart.name}` }
      : { values: o.values, whose: 'the values the bootstrap renders from gitops.checkout' };
  await checkAdoption(ctx, host, signal, reference, { before: ctx.facts.get(host.name, ciliumGenerationBefore) });
}

/**
 * The HelmChart was absent when the hand-over's probe read it (its read answered, with nothing): the
 * hand-over is done and nothing of this run brings the chart back, so the gate compares with the render
 * without reading it again. Undefined when the probe saw the chart or could not read it.
 */
export const helmChartAbsent = hostFact<boolean | undefined>('flux.helmChartAbsent');

/** Pure: the probe's read answered that the chart is not there (the API's NotFound). A read that failed otherwise says nothing. */
export const readAbsent = (r: { code: number | null; stdout: string; stderr: string }) => refusedNotFound(r);

export const handoverStep: Step = {
  id: 'cilium-handover',
  title: 'hand Cilium over to Flux',
  probe: (_h, ctx) => {
    const o = ownershipOf(ctx);
    return {
      helmChart: helmChartProbe(o.helmChart),
      manifest: { command: `test -f ${shq(HELMCHART_MANIFEST)}`, sudo: true },
    };
  },
  plan: ({ probe, ctx, host }): Plan => {
    const changes = handoverChanges(ownershipOf(ctx), { helmChart: helmChartObject(probe.helmChart), manifest: probe.manifest.code === 0 }, host.name);
    const absent = readAbsent(probe.helmChart) || undefined;
    return { changes: changes.length ? [adoptionChange(ownershipOf(ctx), fluxWaitMs(ctx), host.name), ...changes] : [], facts: [helmChartAbsent(absent)] };
  },
};
