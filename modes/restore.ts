// `bootstrap <env> --restore <backup>`: the cold-build DAG with its k3s phases in restore mode (no
// separate engine). k3s-founder checks the backup before any host is touched (prepare), restores it on the
// founder and proves every object came back; k3s-join wipes each other server and rejoins it, one at a
// time; kube-vip, Cilium, verify and Flux then converge as in a cold build. The node-password Secrets the
// snapshot holds are deleted on the founder before any other node rejoins (restore-passwords.ts).
import type { Backup } from '../src/backup/store.ts';
import type { Phase } from '../src/engine/phase.ts';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { recoveryPhases, validatedOrder } from '../phases/index.ts';
import { installSteps } from '../phases/k3s/install-steps.ts';
import { restoreStep } from '../phases/k3s/restore-founder.ts';
import { restoreComplete } from '../phases/k3s/restore-gate.ts';
import { wipeForRejoinStep } from '../phases/k3s/restore-join.ts';
import { forgetNodePasswordsStep } from '../phases/k3s/restore-passwords.ts';
import { restorePrepare } from '../phases/k3s/restore-prepare.ts';
import { backupToken } from '../phases/k3s/restore-token.ts';
import { dagRun, insertAfter, insertBefore, type RunSelection } from './compose.ts';

/** A restore runs from the first phase: cli/args.ts refuses --from, --only and --resume with it. */
export function restoreRun(loaded: LoadedInventory, backup: Backup, sel: RunSelection): RunPlan {
  return dagRun(loaded, { ordered: validatedOrder(restorePhases(recoveryPhases(), backup)), sel, topology: topologyOf(loaded), recovery: 'restore' });
}

export function restorePhases(phases: Phase[], backup: Backup): Phase[] {
  return phases.map((p) => (p.id === 'k3s-founder' ? restoreFounder(p, backup) : p.id === 'k3s-join' ? restoreJoin(p, backup) : p));
}

function restoreFounder(p: Phase, backup: Backup): Phase {
  // The restored cluster keeps the backup's token: the founder's config carries it (restore-token.ts).
  const install = insertBefore(installSteps(backupToken(backup)), 'service', restoreStep(backup));
  return {
    ...p,
    title: `restore the cluster on the founder from backup ${backup.manifest.id}`,
    prepare: restorePrepare(backup),
    // No EXISTING_CLUSTER_FOUND here: no cluster-init of a new cluster happens, and every other server's
    // datastore is wiped on purpose (the plan names them).
    preflight: undefined,
    // Once the restored founder serves, before any other node rejoins: the snapshot's node passwords go.
    steps: insertAfter(install, 'service', forgetNodePasswordsStep(backup)),
    gates: [...(p.gates ?? []), restoreComplete(backup)],
  };
}

function restoreJoin(p: Phase, backup: Backup): Phase {
  return { ...p, title: 'wipe the other servers and rejoin them one at a time', steps: [wipeForRejoinStep(backup), ...p.steps] };
}
