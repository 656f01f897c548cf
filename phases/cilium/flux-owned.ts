// After the flux phase's hand-over, Flux's HelmRelease owns Cilium: the bootstrap's HelmChart and its
// manifest are gone on purpose. Writing the manifest again would bring the HelmChart back and two
// controllers would own one release, so the cilium step then plans nothing; its gate still checks the
// live agents. Check mode says the same (no change). To hand Cilium back to the bootstrap (a rebuild of
// Flux itself), delete the HelmRelease first (with its release kept: spec.suspend, then remove it).
import type { Step } from '../../src/engine/phase.ts';
import { PHASE_FACTS } from '../../src/engine/phase.ts';

export interface CiliumRelease {
  helmChart: { name: string; namespace: string };
  helmRelease: { name: string; namespace: string };
}

/** Pure: Flux owns Cilium when the manifest and the HelmChart are gone and the HelmRelease exists. */
export function fluxOwnsCilium(seen: { manifest: boolean; helmChart: boolean; helmRelease: boolean }): boolean {
  return !seen.manifest && !seen.helmChart && seen.helmRelease;
}

/** The HelmChart step, planning nothing once Flux owns Cilium. `file` is the managed-file probe (exit 0: present). */
export function unlessFluxOwns(step: Step): Step {
  return {
    ...step,
    probe: (host, ctx) => {
      const r = ctx.facts.get<CiliumRelease>(PHASE_FACTS, 'ciliumRelease')!;
      return {
        ...step.probe?.(host, ctx),
        helmChartObject: { command: `k3s kubectl get helmchart.helm.cattle.io -n ${r.helmChart.namespace} ${r.helmChart.name} --ignore-not-found -o name`, sudo: true },
        helmReleaseObject: { command: `k3s kubectl get helmrelease.helm.toolkit.fluxcd.io -n ${r.helmRelease.namespace} ${r.helmRelease.name} --ignore-not-found -o name`, sudo: true },
      };
    },
    plan: (input) => {
      const found = (k: string) => input.probe[k]?.code === 0 && input.probe[k].stdout.trim() !== '';
      const owned = fluxOwnsCilium({ manifest: input.probe.file?.code === 0, helmChart: found('helmChartObject'), helmRelease: found('helmReleaseObject') });
      return owned ? { changes: [], facts: { ciliumOwner: 'flux' } } : step.plan(input);
    },
  };
}
