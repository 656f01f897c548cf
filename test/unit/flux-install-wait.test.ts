// The install step's plan applied: the manifests, then the CRD wait; a wait that runs out is named
// FLUX_CRDS_NOT_ESTABLISHED with kubectl's words (the wait's failsAs), a failed apply stays APPLY_FAILED.
import { describe, expect, it } from 'vitest';
import { crdWaitChange } from '../../phases/flux/install-wait.ts';
import { applyPlan } from '../../src/engine/apply.ts';
import { causesOf } from '../../src/errors.ts';
import type { Plan } from '../../src/engine/phase.ts';
import type { KubeObject } from '../../phases/flux/manifests.ts';

const crd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gitrepositories.source.toolkit.fluxcd.io' },
};
const host = { name: 'k3s-1', address: '', role: 'server' as const, founder: true };

async function applyWith(results: Record<string, { code: number; stderr: string }>) {
  const ran: string[] = [];
  const ctx: any = {
    signal: new AbortController().signal,
    emit: () => undefined,
    remote: () => ({
      host: 'k3s-1',
      exec: async (cmd: string) => {
        ran.push(cmd);
        const hit = Object.entries(results).find(([k]) => cmd.includes(k));
        return { stdout: '', stderr: hit?.[1].stderr ?? '', code: hit?.[1].code ?? 0 };
      },
    }),
  };
  const plan: Plan = {
    changes: [
      { kind: 'command', description: 'apply', command: 'k3s kubectl apply --server-side -f -', sudo: true, stdin: 'x' },
      ...crdWaitChange([crd], new Map(), { create: [crd], update: [] }),
    ],
  };
  try {
    await applyPlan(plan.changes, host, ctx, { phase: 'flux', step: 'install' });
    return { ran, causes: [] as string[][] };
  } catch (err) {
    return { ran, causes: causesOf(err).map((c) => [c.causeId, c.evidence.excerpt ?? '']) };
  }
}

describe('the install step applied', () => {
  it('applies, then waits for the CRDs', async () => {
    const r = await applyWith({});
    expect(r.causes).toEqual([]);
    expect(r.ran.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual(['k3s kubectl apply', 'k3s kubectl wait']);
  });
  it('a wait that runs out is FLUX_CRDS_NOT_ESTABLISHED with what kubectl said', async () => {
    const r = await applyWith({
      'kubectl wait': { code: 1, stderr: 'error: timed out waiting for the condition on customresourcedefinitions/gitrepositories.source.toolkit.fluxcd.io' },
    });
    expect(r.causes).toEqual([
      ['FLUX_CRDS_NOT_ESTABLISHED', 'error: timed out waiting for the condition on customresourcedefinitions/gitrepositories.source.toolkit.fluxcd.io'],
    ]);
  });
  it('a refused apply stays APPLY_FAILED and nothing waits', async () => {
    const r = await applyWith({ 'kubectl apply': { code: 1, stderr: 'error: the server could not find the requested resource' } });
    expect(r.causes.map((c) => c[0])).toEqual(['APPLY_FAILED']);
    expect(r.ran).toHaveLength(1);
  });
});
