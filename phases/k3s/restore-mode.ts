// `bootstrap <env> --restore <backup>`: the cold-build DAG with its k3s phases in restore mode (no
// separate engine). k3s-founder checks the backup before any host is touched (prepare), restores it on the
// founder and proves every object came back; k3s-join wipes each other server and rejoins it, one at a
// time; kube-vip, Cilium, verify and Flux then converge as in a cold build. The node-password Secrets the
// snapshot holds are deleted on the founder before any other node rejoins (restore-passwords.ts).
import type { Backup } from '../../src/backup/store.ts';
import { readBackupToken } from '../../src/backup/store.ts';
import type { Phase } from '../../src/engine/phase.ts';
import { installSteps } from './install-steps.ts';
import { restoreStep } from './restore-founder.ts';
import { restoreComplete } from './restore-gate.ts';
import { wipeForRejoinStep } from './restore-join.ts';
import { forgetNodePasswordsStep } from './restore-passwords.ts';
import { restorePrepare } from './restore-prepare.ts';
import { readToken, writeToken } from '../../src/k3s/token.ts';

export function restorePhases(phases: Phase[], backup: Backup): Phase[] {
  return phases.map((p) => (p.id === 'k3s-founder' ? restoreFounder(p, backup) : p.id === 'k3s-join' ? restoreJoin(p, backup) : p));
}

function restoreFounder(p: Phase, backup: Backup): Phase {
  // The restored cluster keeps the backup's token: the founder's config carries it, and the environment's
  // state folder gets it (prepare refused a state folder holding another one). Check mode writes nothing.
  const install = installSteps((_host, ctx) => {
    const token = readBackupToken(backup)!;
    for (const t of [token.secret, token.full]) if (t) ctx.redact(t);
    if (!ctx.check && !readToken(ctx.stateDir)) writeToken(ctx.stateDir, token);
    return token.secret;
  });
  return {
    ...p,
    title: `restore the cluster on the founder from backup ${backup.manifest.id}`,
    prepare: restorePrepare(backup),
    // No EXISTING_CLUSTER_FOUND here: no cluster-init of a new cluster happens, and every other server's
    // datastore is wiped on purpose (the plan names them).
    preflight: undefined,
    // Once the restored founder serves, before any other node rejoins: the snapshot's node passwords go.
    steps: [...install.slice(0, -1), restoreStep(backup), install.at(-1)!, forgetNodePasswordsStep(backup)],
    gates: [...(p.gates ?? []), restoreComplete(backup)],
  };
}

function restoreJoin(p: Phase, backup: Backup): Phase {
  return { ...p, title: 'wipe the other servers and rejoin them one at a time', steps: [wipeForRejoinStep(backup), ...p.steps] };
}

/**
 * Where a restore ends when the operator names no --until: the last phase that is built, so it converges
 * as far as a cold build can (a phase still declared pending is named by the caller, not faked).
 */
export function lastBuiltPhase(ordered: Phase[]): string | undefined {
  return ordered.filter((p) => !p.pending).at(-1)?.id;
}
