// The facts of the k3s phases (src/engine/facts.ts): declared once, with their type and scope.
import { hostFact } from '../../src/engine/facts.ts';

/** The install steps uploaded a new k3s binary (the service step restarts k3s). */
export const binaryChanged = hostFact<boolean>('k3sBinaryChanged');
/** The config step wrote a new config.yaml (the service step restarts k3s). */
export const configChanged = hostFact<boolean>('k3sConfigChanged');
/** The unit or its environment file changed (the service step reloads systemd and restarts k3s). */
export const unitChanged = hostFact<boolean>('k3sUnitChanged');
export const envChanged = hostFact<boolean>('k3sEnvChanged');
/** The server holds no datastore yet and its config joins this address (join-target.ts): the start step says so. */
export const joinsThrough = hostFact<string>('k3sJoinsThrough');
/**
 * Where k3s's journal stood before the service step (re)started it: the gates read only what k3s logged
 * after it. Absent on a host whose steps did not run this run (none: every gate runs after its host's
 * steps) or from a journal of an older run; a gate then reads the journal's tail.
 */
export const journalCursor = hostFact<string>('journalCursor');
/** The restore step reset etcd from the backup on this host this run (false: a rerun found it restored). */
export const restoredNow = hostFact<boolean>('restoredNow');
/** The servers the restore step stopped first. */
export const stopsOthers = hostFact<string[]>('stopsOthers');
/** The Nodes whose stale node passwords a restore deleted. */
export const forgotNodePasswords = hostFact<string[]>('forgotNodePasswords');
