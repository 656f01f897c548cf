// After the flux phase's hand-over, Flux's HelmRelease owns Cilium: the bootstrap's HelmChart and its
// manifest are gone on purpose. A HelmChart marked unmanaged counts as handed over too (an interrupted
// hand-over, or one left Terminating by an older bootstrap): the flux phase finishes it. Writing the manifest again would bring the HelmChart back and two
// controllers would own one release, so the cilium step then plans nothing; its gate still checks the
// live agents. Check mode says the same (no change). To hand Cilium back to the bootstrap (a rebuild of
// Flux itself), delete the HelmRelease first (with its release kept: spec.suspend, then remove it).
import { hostFact } from '../../src/engine/facts.ts';
import type { Step } from '../../src/engine/phase.ts';
import { helmChartObject, helmChartProbe } from '../../src/k3s/helmchart-object.ts';
import { rawGetProbe } from '../../src/k3s/remote.ts';
import { ciliumRelease } from '../../src/gitops/cilium-release.ts';

/** Who owns Cilium, as the HelmChart step saw it: 'flux' once handed over (set only then). */
export const ciliumOwner = hostFact<'flux'>('ciliumOwner');

/** Pure: Flux owns Cilium when the manifest is gone, the HelmChart gone or unmanaged, and the HelmRelease exists. */
export function fluxOwnsCilium(seen: { manifest: boolean; helmChart: 'absent' | 'managed' | 'unmanaged'; helmRelease: boolean }): boolean {
  return !seen.manifest && seen.helmChart !== 'managed' && seen.helmRelease;
}

/** The HelmChart step, planning nothing once Flux owns Cilium. `file` is the managed-file probe (exit 0: present). */
export function unlessFluxOwns(step: Step): Step {
  return {
    ...step,
    probe: (host, ctx) => {
      const r = ctx.facts.need(ciliumRelease);
      return {
        ...step.probe?.(host, ctx),
        helmChartObject: helmChartProbe(r.helmChart),
        // helm-controller's HelmRelease v2 (fluxcd/helm-controller api/v2); absent, or no such kind yet: NotFound.
        helmReleaseObject: rawGetProbe(`/apis/helm.toolkit.fluxcd.io/v2/namespaces/${r.helmRelease.namespace}/helmreleases/${r.helmRelease.name}`),
      };
    },
    plan: (input) => {
      const found = (k: string) => input.probe[k]?.code === 0 && input.probe[k].stdout.trim() !== '';
      const chart = helmChartObject(input.probe.helmChartObject);
      const owned = fluxOwnsCilium({
        manifest: input.probe.file?.code === 0,
        helmChart: !chart ? 'absent' : chart.unmanaged ? 'unmanaged' : 'managed',
        helmRelease: found('helmReleaseObject'),
      });
      return owned ? { changes: [], facts: [ciliumOwner('flux')] } : step.plan(input);
    },
  };
}
