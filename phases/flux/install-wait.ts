// After Flux's install manifests, a bounded wait until its CRDs are Established: the sync objects (and the
// Kustomizations' own custom resources) cannot be created before. The wait is part of the plan, so check
// mode shows it; when it runs out it is FLUX_CRDS_NOT_ESTABLISHED, not a failed command.
import type { CommandChange } from '../../src/engine/changes.ts';
import { CauseError } from '../../src/errors.ts';
import { lastLines } from '../../src/util/text.ts';
import type { LiveObject } from './applied-step.ts';
import { objectKey, type Drift, type KubeObject } from './manifests.ts';

const WAIT_S = 60;
const WAIT_PREFIX = 'k3s kubectl wait --for=condition=Established';

/** The wait, when anything is applied or a CRD of the install is not Established yet. */
export function crdWaitChange(install: KubeObject[], live: Map<string, LiveObject>, d: Drift): CommandChange[] {
  const crds = install.filter((o) => o.kind === 'CustomResourceDefinition');
  const pending = crds.filter((o) => live.get(objectKey(o))?.established !== true);
  if (!crds.length || (!pending.length && !d.create.length && !d.update.length)) return [];
  const command = `${WAIT_PREFIX} --timeout=${WAIT_S}s ${crds.map((c) => `customresourcedefinition/${c.metadata.name}`).join(' ')}`;
  return [
    {
      kind: 'command',
      description: `wait until Flux's ${crds.length} CRDs are Established (at most ${WAIT_S} s)`,
      command,
      sudo: true,
      timeoutMs: (WAIT_S + 30) * 1000,
      // The wait running out (or failing) is the CRDs' cause, with kubectl's words.
      failsAs: (res, host) =>
        new CauseError('FLUX_CRDS_NOT_ESTABLISHED', {
          host,
          message: `Flux's CRDs were not Established within ${WAIT_S} s`,
          evidence: {
            command,
            exitCode: res.code,
            excerpt: lastLines(res.stderr || res.stdout, 20),
            seen: 'kubectl wait ran out before every CRD had the condition Established=True',
          },
        }),
    },
  ];
}
