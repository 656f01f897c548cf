// The restoring server (the founder): the other servers are stopped first (their old members must not
// talk to the restored one), the snapshot is uploaded and its sha256 checked on the host, then
// `k3s server --cluster-reset --cluster-reset-restore-path` restores it as a one-member cluster with the
// backup's token (in config.yaml), and the service step starts k3s normally. Its old datastore is moved
// aside by k3s itself, never deleted (k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go `Restore`: the db directory is
// renamed to `<db>-old-<unix time>` before the snapshot is restored).
import { CauseError } from '../../src/errors.ts';
import { lastLines } from '../../src/util/text.ts';
import type { Change, FailsAs } from '../../src/engine/changes.ts';
import type { Step } from '../../src/engine/phase.ts';
import type { Backup } from '../../src/backup/store.ts';
import { shq } from '../../src/util/shell.ts';
import { DATA_DIR, K3S_BIN, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { unitActiveProbe } from '../../src/k3s/unit-state.ts';
import { restoredNow, stopsOthers } from './facts.ts';
import { RESTORE_MARKER, markedWith, markerProbe } from './restore-marker.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

const RESET_BUDGET_MS = 600_000;
/** k3s's refusal of a token other than the one the restored datastore's bootstrap data was encrypted with. */
const DIFFERENT_TOKEN = /encrypted with different token/;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { DIFFERENT_TOKEN };
// A reinstalled server has no k3s unit yet: nothing to stop is not a failure.
const stopUnlessAbsent = `sh -c ${shq(`systemctl stop ${SERVER_ROLE.unit} || [ "$(systemctl show -p LoadState --value ${SERVER_ROLE.unit})" = not-found ]`)}`;
const RESTORE_DIR = `${DATA_DIR}/server/restore`;

export function restoreStep(backup: Backup): Step {
  const id = backup.manifest.id;
  const remotePath = `${RESTORE_DIR}/${id}.db`;
  const resetCommand = `${K3S_BIN} server --cluster-reset --cluster-reset-restore-path=${remotePath}`;
  return {
    id: 'restore',
    title: `restore etcd from backup ${id} (cluster-reset with the backup's token)`,
    probe: () => ({
      marker: markerProbe,
      active: unitActiveProbe(SERVER_ROLE.unit),
      ready: { command: `${K3S_BIN} kubectl get --raw=/readyz 2>&1`, sudo: true },
    }),
    plan: ({ host, probe, ctx }) => {
      // A rerun after this server was restored from this backup (the marker is written once the reset
      // succeeded): nothing to redo, also when it does not serve at this moment (k3s restarting after a power
      // cut). A second reset would wipe whatever the cluster wrote since; the service step starts k3s and
      // the founder's API gate names it if it never serves. Starting over is the operator's decision
      // (runbooks/dr-restore.md: remove the marker).
      if (markedWith(probe.marker.stdout, id)) return { changes: [], facts: [restoredNow(false)] };
      const others = ctx.topology.joiners.filter((h) => h.name !== host.name);
      const changes: Change[] = [
        ...others.map((o): Change => ({
          kind: 'command',
          description: `on ${o.name}: stop k3s before the restore (it rejoins later, its datastore wiped)`,
          command: stopUnlessAbsent,
          sudo: true,
          on: o.name,
        })),
        ...(probe.active.stdout.trim() === 'inactive'
          ? []
          : [{ kind: 'command', description: 'stop k3s here before the restore', command: `systemctl stop ${SERVER_ROLE.unit}`, sudo: true } as Change]),
        {
          kind: 'upload',
          localPath: backup.snapshot,
          path: remotePath,
          mode: '0600',
          sha256: backup.manifest.sha256,
          currentSha256: null,
          bytes: backup.manifest.bytes,
        },
        {
          kind: 'command',
          description: "check the uploaded snapshot's sha256 on the host",
          command: `echo ${backup.manifest.sha256}' '${remotePath} | sha256sum -c --status -`,
          sudo: true,
        },
        {
          kind: 'command',
          description: `restore the snapshot as a one-member cluster (the old datastore is moved aside by k3s)`,
          command: resetCommand,
          sudo: true,
          timeoutMs: RESET_BUDGET_MS,
          failsAs: resetFailed(resetCommand),
        },
        { kind: 'file', path: RESTORE_MARKER, content: `${id}\n`, current: probe.marker.stdout.trim() ? probe.marker.stdout : null, mode: '0600' },
      ];
      return { changes, facts: [restoredNow(true), stopsOthers(others.map((o) => o.name))] };
    },
  };
}

/** The reset's own failure: TOKEN_REJECTED when k3s refuses the backup's token, else CLUSTER_RESET_FAILED. */
function resetFailed(command: string): FailsAs {
  return (res, host) => {
    const excerpt = lastLines(res.stderr || res.stdout, 20);
    return new CauseError(DIFFERENT_TOKEN.test(excerpt) ? 'TOKEN_REJECTED' : 'CLUSTER_RESET_FAILED', {
      host,
      evidence: { command, exitCode: res.code, seen: lastLines(excerpt, 1), excerpt },
    });
  };
}
