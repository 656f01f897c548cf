// After the hand-over the cilium phase recognises Flux owning Cilium and plans nothing: a rerun (or
// --check) must not write the HelmChart manifest again.
import { describe, expect, it } from 'vitest';
import { ciliumOwner, fluxOwnsCilium, unlessFluxOwns } from '../../phases/cilium/flux-owned.ts';
import { ciliumRelease, type CiliumRelease } from '../../src/gitops/cilium-release.ts';
import type { Step } from '../../src/engine/phase.ts';
import { Facts } from '../../src/engine/facts.ts';

const inner: Step = {
  id: 'helmchart',
  title: 'HelmChart',
  probe: () => ({ file: { command: 'cat f', sudo: true } }),
  plan: () => ({ changes: [{ kind: 'command', description: 'write the HelmChart', command: 'write' }] }),
};

function planWith(seen: { file: boolean; helmChart: boolean; helmRelease: boolean; unmanaged?: boolean }) {
  const facts = new Facts();
  facts.setRun([
    ciliumRelease({ helmChart: { name: 'cilium', namespace: 'kube-system' }, helmRelease: { name: 'cilium', namespace: 'kube-system' } } as CiliumRelease),
  ]);
  const ctx = { facts } as any;
  const step = unlessFluxOwns(inner);
  const probes = step.probe!({} as any, ctx);
  // A GET of the object: its JSON, or the API's NotFound as kubectl prints it.
  const r = (found: boolean, out: string, missing: string) =>
    found ? { stdout: out, stderr: '', code: 0 } : { stdout: '', stderr: `Error from server (NotFound): ${missing} not found`, code: 1 };
  return {
    probes,
    plan: step.plan({
      host: {} as any,
      local: undefined,
      ctx,
      probe: {
        file: { stdout: '', stderr: '', code: seen.file ? 0 : 1 },
        helmChartObject: r(
          seen.helmChart,
          JSON.stringify({ metadata: { name: 'cilium', ...(seen.unmanaged ? { annotations: { 'helmcharts.helm.cattle.io/unmanaged': 'true' } } : {}) } }),
          'helmcharts.helm.cattle.io "cilium"',
        ),
        helmReleaseObject: r(
          seen.helmRelease,
          JSON.stringify({ kind: 'HelmRelease', metadata: { name: 'cilium' } }),
          'helmreleases.helm.toolkit.fluxcd.io "cilium"',
        ),
      },
    }),
  };
}

describe('the cilium step once Flux owns Cilium', () => {
  it('probes the HelmChart and the HelmRelease read-only, beside the file', () => {
    const { probes } = planWith({ file: false, helmChart: false, helmRelease: true });
    expect(Object.keys(probes)).toEqual(['file', 'helmChartObject', 'helmReleaseObject']);
    // helm-controller's v2 HelmRelease, through the API's connection when the run can, else kubectl's raw GET on the server.
    expect(probes.helmReleaseObject).toEqual({
      command: 'k3s kubectl get --raw /apis/helm.toolkit.fluxcd.io/v2/namespaces/kube-system/helmreleases/cilium --request-timeout=5s',
      sudo: true,
      api: '/apis/helm.toolkit.fluxcd.io/v2/namespaces/kube-system/helmreleases/cilium',
    });
  });
  it('plans nothing when the manifest and the HelmChart are gone and the HelmRelease exists', () => {
    expect(planWith({ file: false, helmChart: false, helmRelease: true }).plan).toEqual({ changes: [], facts: [ciliumOwner('flux')] });
  });
  it.each([
    ['a cold cluster (nothing there)', { file: false, helmChart: false, helmRelease: false }],
    ['before the hand-over (HelmChart and HelmRelease both there)', { file: true, helmChart: true, helmRelease: true }],
    ['a deleted manifest while the HelmChart still exists', { file: false, helmChart: true, helmRelease: true }],
  ])('%s: the HelmChart step plans as before', (_what, seen) => {
    expect(planWith(seen).plan.changes).toHaveLength(1);
  });
  it('a HelmChart the hand-over already marked unmanaged (left Terminating, or an interrupted hand-over) counts as handed over', () => {
    expect(planWith({ file: false, helmChart: true, helmRelease: true, unmanaged: true }).plan).toEqual({ changes: [], facts: [ciliumOwner('flux')] });
  });
  it('fluxOwnsCilium is exactly: no manifest, no managed HelmChart, a HelmRelease', () => {
    expect(fluxOwnsCilium({ manifest: false, helmChart: 'absent', helmRelease: true })).toBe(true);
    expect(fluxOwnsCilium({ manifest: false, helmChart: 'unmanaged', helmRelease: true })).toBe(true);
    expect(fluxOwnsCilium({ manifest: false, helmChart: 'managed', helmRelease: true })).toBe(false);
    expect(fluxOwnsCilium({ manifest: true, helmChart: 'absent', helmRelease: true })).toBe(false);
  });
});
