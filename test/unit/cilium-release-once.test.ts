// Cilium's release is rendered once a run: the cilium and flux phases' prepares (and node-baseline's image
// check) share one render of the GitOps checkout, and the same stop when it cannot be rendered.
import { describe, expect, it, vi } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { Facts } from '../../src/engine/facts.ts';
import type { PrepareContext } from '../../src/engine/context.ts';

const render = vi.hoisted(() => ({ calls: 0, fail: false }));
vi.mock('../../src/gitops/values-source.ts', () => ({
  ciliumValuesFor: async () => {
    render.calls++;
    if (render.fail) throw new CauseError('UNRESOLVED_SUBSTITUTION', { message: 'K3S_API_HOST in helmrelease.yaml' });
    return {
      values: { k8sServiceHost: '10.0.0.9' },
      releaseName: 'cilium',
      helmRelease: { name: 'cilium', namespace: 'flux-system' },
      namespace: 'kube-system',
      storageNamespace: 'kube-system',
    };
  },
}));
const { ciliumRelease, renderCiliumRelease } = await import('../../src/gitops/cilium-release.ts');

const ctxOf = (facts: Facts): PrepareContext => {
  const once: PrepareContext['once'] = (f, compute) => facts.once(f, compute);
  return { inventory: {}, facts, once } as unknown as PrepareContext;
};

describe("Cilium's release, rendered once a run", () => {
  it('renders once for every prepare that asks, and the steps read that render', async () => {
    render.calls = 0;
    render.fail = false;
    const facts = new Facts();
    const [a, b] = [await renderCiliumRelease(ctxOf(facts)), await renderCiliumRelease(ctxOf(facts))];
    expect(render.calls).toBe(1);
    expect(b).toBe(a);
    expect(facts.need(ciliumRelease)).toMatchObject({
      helmChart: { name: 'cilium', namespace: 'kube-system' },
      helmRelease: { name: 'cilium', namespace: 'flux-system' },
      release: { name: 'cilium', namespace: 'kube-system' },
      values: { k8sServiceHost: '10.0.0.9' },
    });
  });

  it('gives each prepare the same stop when the checkout cannot be rendered', async () => {
    render.calls = 0;
    render.fail = true;
    const facts = new Facts();
    await expect(renderCiliumRelease(ctxOf(facts))).rejects.toMatchObject({ causeId: 'UNRESOLVED_SUBSTITUTION' });
    await expect(renderCiliumRelease(ctxOf(facts))).rejects.toMatchObject({ causeId: 'UNRESOLVED_SUBSTITUTION' });
    expect(render.calls).toBe(1);
  });
});
