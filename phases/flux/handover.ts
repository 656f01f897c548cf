// The hand-over of Cilium from the bootstrap's HelmChart to Flux's HelmRelease. The plan (what check mode
// shows): remove the HelmChart manifest from the auto-deploy folder (or k3s would apply it again at its
// next start), annotate the HelmChart `helmcharts.helm.cattle.io/unmanaged` (helm-controller then leaves
// the release alone) and delete it. Performing it first waits until Flux is Ready and its HelmRelease has
// adopted the release, then proves parity: same values, and the cilium DaemonSet did not roll. Only then
// does the HelmChart go: a drift keeps it, so nothing is lost.
import { applyChange } from '../../src/engine/apply.ts';
import type { Change } from '../../src/engine/changes.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, Plan, Step } from '../../src/engine/phase.ts';
import { PHASE_FACTS } from '../../src/engine/phase.ts';
import { CauseError } from '../../src/errors.ts';
import { shq } from '../../src/util/shell.ts';
import { HELMCHART_MANIFEST } from '../cilium/helmchart.ts';
import { kubectl } from '../k3s/remote-k3s.ts';
import { helmChartValues, rolled, valuesDiff } from './parity.ts';
import { FLUX_WAIT_MAX_MS, fluxWaitSignal, waitFluxReady, waitHelmReleaseReady, type NamedObject } from './ready-wait.ts';

export const UNMANAGED = 'helmcharts.helm.cattle.io/unmanaged';
/** The waits of the hand-over share one budget (shortened by flux.waitSeconds). */
export const HANDOVER_BUDGET_MS = FLUX_WAIT_MAX_MS;

export interface CiliumOwnership {
  /** The bootstrap's HelmChart (kube-system/<release name>). */
  helmChart: NamedObject;
  /** The HelmRelease at cilium.helmRelease, as Flux names it. */
  helmRelease: NamedObject;
  /** The values the bootstrap renders from the checkout (what its HelmChart installs). */
  values: Record<string, unknown>;
}

export const ownershipOf = (ctx: RunContext) => ctx.facts.get<CiliumOwnership>(PHASE_FACTS, 'ciliumOwnership')!;

/** The live cilium DaemonSet's generation (read-only), for the roll check across the hand-over. */
export const DAEMONSET_PROBE = { command: 'k3s kubectl get daemonset -n kube-system cilium -o jsonpath={.metadata.generation}', sudo: true };

export function daemonSetGeneration(stdout: string, code: number | null): number | undefined {
  const n = Number(stdout.trim());
  return code === 0 && stdout.trim() !== '' && Number.isFinite(n) ? n : undefined;
}

/** Pure: the hand-over's changes from what the probe saw (none once Flux owns Cilium). */
export function handoverChanges(o: CiliumOwnership, seen: { helmChart: boolean; manifest: boolean }): Change[] {
  const hc = `-n ${o.helmChart.namespace} helmchart.helm.cattle.io/${o.helmChart.name}`;
  return [
    ...(seen.manifest ? [{ kind: 'command' as const, description: `remove ${HELMCHART_MANIFEST}: Flux owns Cilium from now on`, command: `rm -f ${shq(HELMCHART_MANIFEST)}`, sudo: true }] : []),
    ...(seen.helmChart
      ? [
          { kind: 'command' as const, description: `annotate HelmChart ${o.helmChart.namespace}/${o.helmChart.name} ${UNMANAGED} (the release stays)`, command: `k3s kubectl annotate --overwrite ${hc} ${UNMANAGED}=true`, sudo: true },
          { kind: 'command' as const, description: `delete HelmChart ${o.helmChart.namespace}/${o.helmChart.name}: HelmRelease ${o.helmRelease.namespace}/${o.helmRelease.name} owns Cilium`, command: `k3s kubectl delete ${hc} --wait=false`, sudo: true },
        ]
      : []),
  ];
}

/** Pure: CILIUM_PARITY_DRIFT when the values differ or the agents rolled, else nothing. */
export function parityDrift(o: CiliumOwnership, bootstrapValues: unknown, whose: string, liveValues: unknown, ds?: { before?: number; after?: number }): CauseError | undefined {
  const keys = valuesDiff(bootstrapValues, liveValues);
  const roll = ds && rolled(ds.before === undefined ? undefined : { generation: ds.before }, ds.after === undefined ? undefined : { generation: ds.after });
  if (!keys.length && !roll) return undefined;
  const hr = `HelmRelease ${o.helmRelease.namespace}/${o.helmRelease.name}`;
  const parts = [
    keys.length ? `${hr} spec.values differ from ${whose} at ${keys.join(', ')}` : '',
    roll ? `the cilium DaemonSet rolled (generation ${ds!.before} → ${ds!.after}): Flux upgraded the release with other values` : '',
  ].filter(Boolean);
  const seen = parts.join('; ');
  return new CauseError('CILIUM_PARITY_DRIFT', {
    message: seen,
    evidence: { command: `kubectl get helmrelease -n ${o.helmRelease.namespace} ${o.helmRelease.name} -o jsonpath={.spec.values}`, seen, excerpt: keys.map((k) => `${k}: bootstrap ${JSON.stringify(pick(bootstrapValues, k))}, Flux ${JSON.stringify(pick(liveValues, k))}`).join('\n') },
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
export async function checkAdoption(ctx: RunContext, host: HostRef, signal: AbortSignal, reference: { values: unknown; whose: string }, ds?: { before?: number }): Promise<void> {
  const o = ownershipOf(ctx);
  await waitFluxReady(ctx, host, signal);
  const hr = await waitHelmReleaseReady(ctx, host, o.helmRelease, signal);
  const after = ds ? daemonSetGeneration(...(await readGeneration(ctx, host))) : undefined;
  const drift = parityDrift(o, reference.values, reference.whose, hr.spec?.values ?? {}, ds ? { before: ds.before, after } : undefined);
  if (drift) throw drift;
}

async function readGeneration(ctx: RunContext, host: HostRef): Promise<[string, number | null]> {
  const r = await kubectl(ctx, host, 'get daemonset -n kube-system cilium -o jsonpath={.metadata.generation}');
  return [r.stdout, r.code];
}

export const handoverStep: Step = {
  id: 'cilium-handover',
  title: 'hand Cilium over to Flux',
  probe: (_h, ctx) => {
    const o = ownershipOf(ctx);
    return {
      helmChart: { command: `k3s kubectl get helmchart.helm.cattle.io -n ${o.helmChart.namespace} ${o.helmChart.name} --ignore-not-found -o name`, sudo: true },
      manifest: { command: `test -f ${shq(HELMCHART_MANIFEST)}`, sudo: true },
    };
  },
  plan: ({ probe, ctx }): Plan => ({
    changes: handoverChanges(ownershipOf(ctx), { helmChart: probe.helmChart.code === 0 && probe.helmChart.stdout.trim() !== '', manifest: probe.manifest.code === 0 }),
  }),
  async apply(plan, host, ctx) {
    const o = ownershipOf(ctx);
    const signal = fluxWaitSignal(ctx, ctx.signal);
    const chart = await kubectl(ctx, host, `get helmchart.helm.cattle.io -n ${o.helmChart.namespace} ${o.helmChart.name} -o json`);
    // Parity against what is installed: the HelmChart's values while it exists (else what the bootstrap renders).
    const reference =
      chart.code === 0
        ? { values: helmChartValues(JSON.parse(chart.stdout)), whose: `the bootstrap's HelmChart ${o.helmChart.namespace}/${o.helmChart.name}` }
        : { values: o.values, whose: 'the values the bootstrap renders from gitops.checkout' };
    await checkAdoption(ctx, host, signal, reference, { before: ctx.facts.get<number>(host.name, 'ciliumGenerationBefore') });
    for (const change of plan.changes) await applyChange(ctx.remote(host), change, ctx.signal);
  },
};
