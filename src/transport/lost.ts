// A connection lost while a command ran, as the named cause a step stops with.
import { CauseError } from '../errors.ts';

/**
 * A command whose connection was lost while it ran (ExecResult.lost): the host went down, its cable was
 * pulled, or it stopped answering the keepalives. Not the command's failure, and not a budget overrun.
 */
export function connectionLost(host: string, what: string): CauseError {
  return new CauseError('SSH_UNREACHABLE', {
    host,
    message: `lost the SSH connection to ${host} while a command ran`,
    retryable: true,
    evidence: {
      command: what,
      seen: `the connection to ${host} ended, or stopped answering its SSH keepalives, while the command ran (it may or may not have finished there)`,
    },
  });
}
