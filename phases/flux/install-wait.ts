// After Flux's install manifests, a bounded wait until its CRDs are Established: the sync objects (and the
// Kustomizations' own custom resources) cannot be created before. The wait is part of the plan, so check
// mode shows it; when it runs out it is FLUX_CRDS_NOT_ESTABLISHED, not a failed command.
import { applyChange } from '../../src/engine/apply.ts';
import type { Change, CommandChange } from '../../src/engine/changes.ts';
import type { Step } from '../../src/engine/phase.ts';
import { CauseError, causesOf } from '../../src/errors.ts';
import type { LiveObject } from './applied-step.ts';
import { objectKey, type Drift, type KubeObject } from './manifests.ts';

const WAIT_S = 60;
const WAIT_PREFIX = 'k3s kubectl wait --for=condition=Established';

/** The wait, when anything is applied or a CRD of the install is not Established yet. */
export function crdWaitChange(install: KubeObject[], live: Map<string, LiveObject>, d: Drift): CommandChange[] {
  const crds = install.filter((o) => o.kind === 'CustomResourceDefinition');
  const pending = crds.filter((o) => live.get(objectKey(o))?.established !== true);
  if (!crds.length || (!pending.length && !d.create.length && !d.update.length)) return [];
  return [
    {
      kind: 'command',
      description: `wait until Flux's ${crds.length} CRDs are Established (at most ${WAIT_S} s)`,
      command: `${WAIT_PREFIX} --timeout=${WAIT_S}s ${crds.map((c) => `customresourcedefinition/${c.metadata.name}`).join(' ')}`,
      sudo: true,
      timeoutMs: (WAIT_S + 30) * 1000,
    },
  ];
}

export const installApply: Step['apply'] = async (plan, host, ctx) => {
  for (const change of plan.changes as Change[]) {
    try {
      await applyChange(ctx.remote(host), change, ctx.signal);
    } catch (err) {
      const [cause] = causesOf(err);
      if (change.kind !== 'command' || !change.command.startsWith(WAIT_PREFIX) || !cause) throw err;
      throw new CauseError('FLUX_CRDS_NOT_ESTABLISHED', {
        host: host.name,
        message: `Flux's CRDs were not Established within ${WAIT_S} s`,
        evidence: { command: change.command, exitCode: cause.evidence.exitCode, excerpt: cause.evidence.excerpt, seen: 'kubectl wait ran out before every CRD had the condition Established=True' },
      });
    }
  }
};
