// A server other than the restoring one, in a restore: stopped, its datastore wiped (it belongs to the
// cluster before the disaster, and would rejoin that cluster's members), then it joins the restored
// cluster like a joiner of a cold build: one at a time, through the voter gate.
import type { Change } from '../../src/engine/changes.ts';
import type { Step } from '../../src/engine/phase.ts';
import type { Backup } from '../../src/backup/store.ts';
import { DB_DIR, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { unitActiveProbe, unitRuns } from '../../src/k3s/unit-state.ts';
import { RESTORE_MARKER, markedWith, markerProbe } from './restore-marker.ts';

export function wipeForRejoinStep(backup: Backup): Step {
  const id = backup.manifest.id;
  return {
    id: 'restore-wipe',
    title: `stop k3s and wipe ${DB_DIR} to rejoin the cluster restored from ${id}`,
    probe: () => ({
      marker: markerProbe,
      active: unitActiveProbe(SERVER_ROLE.unit),
      db: { command: `test -d ${DB_DIR} && echo present || true`, sudo: true },
    }),
    plan: ({ probe }) => {
      // Rejoined after this backup's restore already (marker) and running: its datastore is the restored cluster's.
      if (markedWith(probe.marker.stdout, id) && unitRuns(probe.active.stdout)) return { changes: [] };
      const changes: Change[] = [];
      if (probe.active.stdout.trim() !== 'inactive')
        changes.push({ kind: 'command', description: 'stop k3s', command: `systemctl stop ${SERVER_ROLE.unit}`, sudo: true });
      if (probe.db.stdout.trim() === 'present')
        changes.push({
          kind: 'command',
          description: "WIPE this server's datastore (it rejoins the restored cluster)",
          command: `rm -rf ${DB_DIR}`,
          sudo: true,
        });
      changes.push({ kind: 'file', path: RESTORE_MARKER, content: `${id}\n`, current: probe.marker.stdout.trim() ? probe.marker.stdout : null, mode: '0600' });
      return { changes };
    },
  };
}
