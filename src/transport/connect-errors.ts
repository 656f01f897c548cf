// What ssh2/node-ssh threw while connecting, as a named cause with evidence an operator can rerun.
import { CauseError } from '../errors.ts';
import { hostKeyError, type HostKeySeen } from './host-key.ts';
import { shq } from '../util/shell.ts';
import type { SshTarget } from './types.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

/** ssh2's words for a connection dropped before the handshake ended (lib/client.js). */
const DROPPED_EARLY = /before handshake|No response from server/i;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { DROPPED_EARLY };

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EPIPE', 'EHOSTDOWN', 'EAI_AGAIN']);

/** Turn what ssh2/node-ssh threw into a named cause; `retryable` says whether another attempt may help. */
export function classifyConnectError(
  err: unknown,
  target: SshTarget,
  via: SshTarget | undefined,
  seen: HostKeySeen | undefined,
  offered: string[],
): CauseError {
  if (err instanceof CauseError) return err;
  if (seen) {
    const keyErr = hostKeyError(seen, target, via);
    if (keyErr) return keyErr;
  }
  const e = err as Error & { code?: string | number; level?: string };
  const where = `${target.address}:${target.port}${via ? ` via ${via.name}` : ''}`;
  const sshCmd = `ssh -v${via ? ` -J ${jumpSpec(via)}` : ''} -p ${target.port} ${target.user}@${target.address} true`;
  const message = e?.message ?? String(err);
  if (e?.level === 'client-authentication') {
    return new CauseError('SSH_AUTH_FAILED', {
      host: target.name,
      message: `${target.name} (${where}) refused the login of ${target.user}`,
      retryable: false,
      cause: err,
      evidence: {
        command: target.identityFile ? sshCmd.replace('ssh -v', `ssh -v -i ${shq(target.identityFile)}`) : sshCmd,
        seen: `user ${target.user}: the host accepted none of: ${offered.join(', ')}`,
      },
    });
  }
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (e?.level === 'client-timeout' || (code !== undefined && UNREACHABLE_CODES.has(code))) {
    return new CauseError('SSH_UNREACHABLE', {
      host: target.name,
      message: `${target.name} (${where}) does not answer on its SSH port`,
      retryable: true,
      cause: err,
      evidence: { command: sshCmd, seen: e?.level === 'client-timeout' ? `no SSH handshake within the connect timeout (${message})` : `${code}: ${message}` },
    });
  }
  if (code === 'ENOTFOUND') {
    return new CauseError('SSH_UNREACHABLE', {
      host: target.name,
      message: `${target.address} does not resolve`,
      retryable: false,
      cause: err,
      evidence: { command: `getent hosts ${target.address}`, seen: `${code}: ${message}` },
    });
  }
  // Dropped before the handshake: sshd starting up or shedding load (MaxStartups); worth another try.
  const early = DROPPED_EARLY.test(message);
  return new CauseError('SSH_HANDSHAKE_FAILED', {
    host: target.name,
    message: `SSH handshake with ${target.name} (${where}) failed: ${message}`,
    retryable: early,
    cause: err,
    evidence: { command: sshCmd, seen: message },
  });
}

/** A target as `ssh -J` takes it. */
export function jumpSpec(t: SshTarget): string {
  return `${t.user}@${t.address}:${t.port}`;
}
