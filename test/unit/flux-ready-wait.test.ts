// The Flux wait with a fake API: it requests a reconcile first, waits while statuses are old or pending,
// stops on a failure seen twice for the current request, and ends at its budget with what it saw last.
import { describe, expect, it } from 'vitest';
import { waitFluxReady } from '../../phases/flux/ready-wait.ts';
import { causesOf } from '../../src/errors.ts';

const TOKEN = new Date(0).toISOString();
const repo = (ready: string, reason: string, message: string, handled = TOKEN) => ({
  kind: 'GitRepository',
  metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
  status: { observedGeneration: 1, lastHandledReconcileAt: handled, conditions: [{ type: 'Ready', status: ready, reason, message }], artifact: { revision: 'main@sha1:1' } },
});
const ks = {
  kind: 'Kustomization',
  metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
  spec: { sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
  status: { observedGeneration: 1, lastHandledReconcileAt: TOKEN, lastAttemptedRevision: 'main@sha1:1', conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied revision: main@sha1:1' }] },
};

function fakeCtx(lists: unknown[][], budgetLooks = 100) {
  const commands: string[] = [];
  let looks = 0;
  const controller = new AbortController();
  const ctx: any = {
    signal: new AbortController().signal,
    clock: { now: () => 0, sleep: async (_ms: number, signal: AbortSignal) => signal.throwIfAborted() },
    remote: () => ({
      exec: async (cmd: string) => {
        commands.push(cmd);
        if (cmd.includes(' annotate ')) return { code: 0, stdout: '', stderr: '' };
        const items = lists[Math.min(looks, lists.length - 1)];
        looks++;
        if (looks >= budgetLooks) controller.abort();
        return { code: 0, stdout: JSON.stringify({ items }), stderr: '' };
      },
    }),
  };
  return { ctx, commands, signal: controller.signal };
}

const run = async (f: ReturnType<typeof fakeCtx>) => {
  try {
    await waitFluxReady(f.ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, f.signal);
    return [];
  } catch (err) {
    return causesOf(err).map((c) => [c.causeId, c.message]);
  }
};

describe('waitFluxReady', () => {
  it('requests a reconcile per namespace, then resolves once everything answers it Ready', async () => {
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored', 'older'), ks], [repo('True', 'Succeeded', 'stored'), ks]]);
    expect(await run(f)).toEqual([]);
    expect(f.commands.filter((c) => c.includes(' annotate '))).toEqual([
      `k3s kubectl annotate --overwrite gitrepositories.source.toolkit.fluxcd.io --all -n flux-system reconcile.fluxcd.io/requestedAt=${TOKEN}`,
      `k3s kubectl annotate --overwrite kustomizations.kustomize.toolkit.fluxcd.io --all -n flux-system reconcile.fluxcd.io/requestedAt=${TOKEN}`,
    ]);
  });

  it('stops on a failure the controller reported for this request, seen twice in a row', async () => {
    const failed = repo('False', 'GitOperationFailed', 'ssh: unable to authenticate');
    const f = fakeCtx([[repo('True', 'Succeeded', 'old', 'older'), ks], [failed, ks], [failed, ks], [repo('True', 'Succeeded', 'never reached'), ks]]);
    expect(await run(f)).toEqual([['FLUX_SOURCE_NOT_READY', 'GitRepository flux-system/flux-system: GitOperationFailed: ssh: unable to authenticate']]);
  });

  it('a failure from before the request is not judged: it waits, and at the budget names what it saw', async () => {
    const stale = repo('False', 'GitOperationFailed', 'old failure', 'older');
    const f = fakeCtx([[stale, ks]], 4);
    expect(await run(f)).toEqual([['FLUX_SOURCE_NOT_READY', 'GitRepository flux-system/flux-system: GitOperationFailed: old failure']]);
  });
});
