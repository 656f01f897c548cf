// After Flux's install manifests, a bounded wait until its CRDs are Established: the sync objects (and the
// Kustomizations' own custom resources) cannot be created before. The wait is part of the plan, so check
// mode shows it; when it runs out it is FLUX_CRDS_NOT_ESTABLISHED naming the CRDs still pending, not a failed
// command. Each look reads the CRDs through the Kubernetes API over the run's SSH connection (`k3s kubectl get`
// on the server without a kubeconfig), as `kubectl wait --for=condition=Established` would watch them.
import type { ActionChange } from '../../src/engine/changes.ts';
import { poll } from '../../src/engine/poll.ts';
import { CauseError } from '../../src/errors.ts';
import { apiRead, apiShown } from '../../src/kube/api-read.ts';
import type { LiveObject } from './applied-step.ts';
import { objectKey, type Drift, type KubeObject } from './manifests.ts';

const WAIT_S = 60;
const LOOK_EVERY_MS = 1_000;

const crdRead = (name: string) => ({
  path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
  kubectl: `get customresourcedefinition ${name} -o json --request-timeout=5s`,
});

/** Pure: a CRD's answer says Established=True (apiextensions-apiserver sets it once the names are accepted and served). */
export function establishedIn(r: { code: number | null; stdout: string }): boolean {
  if (r.code !== 0) return false;
  try {
    return (JSON.parse(r.stdout).status?.conditions ?? []).some((c: { type?: string; status?: string }) => c.type === 'Established' && c.status === 'True');
  } catch {
    return false;
  }
}

/** The wait, when anything is applied or a CRD of the install is not Established yet. `via`: the step's host. */
export function crdWaitChange(install: KubeObject[], live: Map<string, LiveObject>, d: Drift, via: string): ActionChange[] {
  const crds = install.filter((o) => o.kind === 'CustomResourceDefinition');
  const pending = crds.filter((o) => live.get(objectKey(o))?.established !== true);
  if (!crds.length || (!pending.length && !d.create.length && !d.update.length)) return [];
  const shown = `every ${LOOK_EVERY_MS / 1000} s, at most ${WAIT_S} s, until each says Established=True: ${apiShown('GET', crdRead('<each CRD>'), via)}`;
  return [
    {
      kind: 'action',
      description: `wait until Flux's ${crds.length} CRDs are Established (at most ${WAIT_S} s)`,
      runs: [shown],
      budgetMs: (WAIT_S + 30) * 1000,
      run: async (ctx) => {
        let waiting = crds.map((c) => c.metadata.name);
        let said = '';
        const done = await poll(ctx, ctx.signal, {
          everyMs: LOOK_EVERY_MS,
          withinMs: WAIT_S * 1000,
          look: async () => {
            const answers = await Promise.all(
              waiting.map((n) => apiRead(ctx, ctx.host, crdRead(n)).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }))),
            );
            const pending = answers.flatMap((a, i) =>
              establishedIn(a) ? [] : [{ name: waiting[i], why: a.code === 0 ? 'Established is not True yet' : a.stderr.trim().split('\n')[0] }],
            );
            said = pending.map((p) => `${p.name}: ${p.why}`).join('\n');
            waiting = pending.map((p) => p.name);
            return waiting.length === 0 || undefined;
          },
        });
        if (done) return;
        throw new CauseError('FLUX_CRDS_NOT_ESTABLISHED', {
          host: ctx.host.name,
          message: `Flux's CRDs were not Established within ${WAIT_S} s`,
          evidence: { command: shown, excerpt: said, seen: `not Established within ${WAIT_S} s: ${waiting.join(', ')}` },
        });
      },
    },
  ];
}
