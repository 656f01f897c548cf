// The shared lab for tests: ensureLab() brings it up once (quick when it already runs, as `lab up`
// reuses a healthy lab of the same shape). Tests that break a host heal it before they end.
// Also the lab project's globalSetup: its teardown takes the lab down at the end of `npm test`.
import { down, hostExec, hosts, paths, ssh, sshArgs, up, type UpResult } from '../../lab/api.ts';
import { acquireLabLock } from '../../lab/lock.ts';
import { isRoot } from './env.ts';

export { hostExec, hosts, paths, ssh, sshArgs };

export interface LabShapeWanted {
  servers?: number;
  agents?: number;
  /** The hosts behind a bastion, unreachable from this machine (`lab up --bastion`). */
  bastion?: boolean;
}

let upOnce: Promise<UpResult> | undefined;
let upShape = '';

/** The lab of the given shape (default 3 servers and 1 agent, so every lab test meets an agent), up and answering SSH. */
export function ensureLab(shape: LabShapeWanted = {}): Promise<UpResult> {
  const servers = shape.servers ?? 3;
  const agents = shape.agents ?? 1;
  const bastion = shape.bastion ?? false;
  const key = `${servers}/${agents}${bastion ? '/bastion' : ''}`;
  if (!upOnce || upShape !== key) {
    upShape = key;
    upOnce = up({ servers, agents, bastion });
    upOnce.catch(() => (upOnce = undefined));
  }
  return upOnce;
}

/**
 * Hold the lab while a test breaks a host on purpose: ensureLab() in other workers waits until the
 * release instead of rebuilding a lab it sees unhealthy. Returns the release function.
 */
export const holdLab = acquireLabLock;

/** Forget the cached result (after a test took the lab down on purpose). */
export function forgetLab(): void {
  upOnce = undefined;
}

/** vitest globalSetup: nothing before; lab down after the lab project ran. */
export async function teardown(): Promise<void> {
  if (isRoot && process.platform === 'linux') await down();
}
