// Which backup a server was last restored from (or rejoined after): written once its part of the restore
// is done, so a rerun of the same restore goes on where it stopped instead of wiping again.
import { DATA_DIR } from '../../src/k3s/paths.ts';

export const RESTORE_MARKER = `${DATA_DIR}/server/bootstrap-restored-from`;

export const markerProbe = { command: `cat ${RESTORE_MARKER} 2>/dev/null || true`, sudo: true };

/** The marker names this backup. */
export const markedWith = (seen: string, id: string) => seen.trim() === id;
