// The catalogue of named causes: the interface operators and tests match on.
// Every id here has a section in runbooks/causes.md (test/unit/causes-runbook.test.ts keeps them in step).
import type { CauseDef } from './define.ts';
import { artifactCauses } from './artifacts.ts';
import { backupCauses } from './backup.ts';
import { baselineCauses } from './baseline.ts';
import { ciliumCauses } from './cilium.ts';
import { drainCauses } from './drain.ts';
import { engineCauses } from './engine.ts';
import { fluxCauses } from './flux.ts';
import { imageCauses } from './images.ts';
import { inventoryCauses } from './inventory.ts';
import { k3sCauses } from './k3s.ts';
import { kubeconfigCauses } from './kubeconfig.ts';
import { replaceCauses } from './replace.ts';
import { removeCauses } from './remove.ts';
import { rollingCauses } from './rolling.ts';
import { kubeVipCauses } from './kubevip.ts';
import { resetCauses } from './reset.ts';
import { sshCauses } from './ssh.ts';
import { verifyCauses } from './verify.ts';

const all = {
  ...inventoryCauses,
  ...engineCauses,
  ...baselineCauses,
  ...k3sCauses,
  ...replaceCauses,
  ...rollingCauses,
  ...kubeVipCauses,
  ...resetCauses,
  ...ciliumCauses,
  ...verifyCauses,
  ...fluxCauses,
  ...imageCauses,
  ...backupCauses,
  ...sshCauses,
  ...kubeconfigCauses,
  ...artifactCauses,
  ...drainCauses,
  ...removeCauses,
};

export type CauseId = keyof typeof all;

export interface CauseInfo extends CauseDef {
  id: CauseId;
  /** Where the runbook section is, relative to the repository root. */
  runbook: string;
}

function runbookAnchor(id: string): string {
  return `runbooks/causes.md#${id.toLowerCase()}`; // GitHub's anchor for a "## ID" heading
}

export function causeInfo(id: CauseId): CauseInfo {
  const def = all[id];
  if (!def) throw new Error(`unknown cause id ${id}`);
  return { id, ...def, runbook: runbookAnchor(id) };
}

export function allCauses(): CauseInfo[] {
  return (Object.keys(all) as CauseId[]).sort().map(causeInfo);
}

export function isCauseId(id: string): id is CauseId {
  return Object.hasOwn(all, id);
}
