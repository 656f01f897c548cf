// backup (bootstrap backup <env>): an etcd snapshot on a server whose API is ready, copied to the
// environment's backup folder on the operator's machine with the cluster token and a manifest
// (src/backup/take.ts). Not part of the build's DAG: a session of its own (modes/backup.ts).
import { hostFact } from '../src/engine/facts.ts';
import type { Phase, Step } from '../src/engine/phase.ts';
import { backupFailed } from '../src/backup/pull.ts';
import { backupAction } from '../src/backup/take.ts';
import { versionFromOutput } from '../src/backup/version.ts';
import { founderRef, serverRefs } from '../src/inventory/hosts.ts';
import { K3S_BIN } from '../src/k3s/paths.ts';

/** The server's k3s version, as the snapshot step's plan read it. */
const k3sVersion = hostFact<string>('k3sVersion');

function snapshotStep(id: string): Step {
  return {
    id: 'snapshot',
    title: 'etcd snapshot, cluster token and object inventory copied to the backup folder',
    probe: () => ({
      version: { command: `${K3S_BIN} --version` },
      ready: { command: `${K3S_BIN} kubectl get --raw=/readyz`, sudo: true },
    }),
    plan: ({ host, probe, ctx }) => {
      const version = versionFromOutput(probe.version.stdout);
      if (probe.ready.code !== 0 || probe.ready.stdout.trim() !== 'ok' || !version) {
        return {
          changes: [],
          stops: [
            backupFailed(
              host.name,
              'k3s kubectl get --raw=/readyz',
              probe.ready,
              `the API on ${host.name} is not ready: take the snapshot on a server that serves (--server NAME)`,
            ),
          ],
        };
      }
      const basis = { id, env: ctx.env, k3sVersion: version, snapshotServer: host.name, servers: serverRefs(ctx.inventory).map((s) => s.name) };
      return { changes: [backupAction(basis, ctx.stateDir)], facts: [k3sVersion(version)] };
    },
  };
}

/**
 * The backup as a one-phase session. `id` names the folder (the time it was started). It runs on the
 * founder, or on `server`: only that host must answer, so a backup can be taken with the founder down.
 */
export function backupPhase(id: string, server?: string): Phase {
  return {
    id: 'backup',
    title: 'back up the cluster (etcd snapshot, token, object inventory)',
    needs: [],
    hosts: (c) => (server ? serverRefs(c.inventory).filter((h) => h.name === server) : founderRef(c.inventory)),
    concurrency: 'serial',
    steps: [snapshotStep(id)],
  };
}
