// How connection failures become named causes: which ones another attempt may fix, and what the
// operator is told to run by hand.
import { describe, expect, it } from 'vitest';
import { classifyConnectError } from '../../src/transport/connect-errors.ts';
import { checkHostKey, parseKnownHosts } from '../../src/transport/known-hosts.ts';
import type { SshTarget } from '../../src/transport/types.ts';

const target: SshTarget = {
  name: 'k3s-prod-1',
  address: '192.168.2.10',
  port: 22,
  user: 'ops',
  identityFile: '/home/op/.ssh/id_ed25519',
  knownHostsFile: '/home/op/.ssh/known_hosts',
};
const jump: SshTarget = { ...target, name: 'jump', address: '192.168.2.1', bastion: undefined };
const err = (message: string, extra: Record<string, unknown>) => Object.assign(new Error(message), extra);

describe('connection failures as named causes', () => {
  it('calls refused, unreachable and timed-out connections SSH_UNREACHABLE, worth another attempt', () => {
    for (const code of ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET']) {
      const e = classifyConnectError(err(`connect ${code}`, { code, level: 'client-socket' }), target, undefined, undefined, []);
      expect(e).toMatchObject({ causeId: 'SSH_UNREACHABLE', retryable: true, host: 'k3s-prod-1' });
      expect(e.evidence.command).toBe('ssh -v -p 22 ops@192.168.2.10 true');
    }
    const timeout = classifyConnectError(err('Timed out while waiting for handshake', { level: 'client-timeout' }), target, undefined, undefined, []);
    expect(timeout).toMatchObject({ causeId: 'SSH_UNREACHABLE', retryable: true });
  });

  it('calls a name that does not resolve SSH_UNREACHABLE, not worth retrying', () => {
    const e = classifyConnectError(err('getaddrinfo ENOTFOUND jumpbox', { code: 'ENOTFOUND' }), target, undefined, undefined, []);
    expect(e).toMatchObject({ causeId: 'SSH_UNREACHABLE', retryable: false });
  });

  it('calls a refused login SSH_AUTH_FAILED, never retried, naming what was offered', () => {
    const e = classifyConnectError(err('All configured authentication methods failed', { level: 'client-authentication' }), target, undefined, undefined, [
      'identity file /home/op/.ssh/id_ed25519',
    ]);
    expect(e).toMatchObject({ causeId: 'SSH_AUTH_FAILED', retryable: false });
    expect(e.evidence.seen).toBe('user ops: the host accepted none of: identity file /home/op/.ssh/id_ed25519');
    expect(e.evidence.command).toBe('ssh -v -i /home/op/.ssh/id_ed25519 -p 22 ops@192.168.2.10 true');
  });

  it('names the jump host in the command to rerun', () => {
    const e = classifyConnectError(err('x', { code: 'ECONNREFUSED' }), target, jump, undefined, []);
    expect(e.evidence.command).toBe('ssh -v -J ops@192.168.2.1:22 -p 22 ops@192.168.2.10 true');
  });

  it('turns ssh2\'s "Host denied" into the host key verdict that caused it', () => {
    const key = Buffer.from('AAAAC3NzaC1lZDI1NTE5AAAAIEkw1fNGKaJOkmr2EYL9pEW1ZF2PXqOsd/drMAs3bGsp', 'base64');
    const other = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRcrrCcE2lz02e0uTryKq9ykvmUlFIK7OcHjAXDTmkJ';
    const entries = parseKnownHosts(`192.168.2.10 ${other}`, target.knownHostsFile);
    const denied = err('Host denied (verification failed)', { level: 'handshake' });
    const seen = { key, verdict: checkHostKey(entries, target.address, 22, key), hashedFile: false };
    expect(classifyConnectError(denied, target, undefined, seen, [])).toMatchObject({ causeId: 'HOST_KEY_MISMATCH', retryable: false });
    const unknown = { key, verdict: checkHostKey([], target.address, 22, key), hashedFile: false };
    expect(classifyConnectError(denied, target, undefined, unknown, [])).toMatchObject({ causeId: 'HOST_KEY_UNKNOWN', retryable: false });
  });

  it('calls other handshake failures SSH_HANDSHAKE_FAILED; only an early drop is worth another attempt', () => {
    const early = classifyConnectError(err('Connection lost before handshake', { level: 'protocol' }), target, undefined, undefined, []);
    expect(early).toMatchObject({ causeId: 'SSH_HANDSHAKE_FAILED', retryable: true });
    const algo = classifyConnectError(err('Handshake failed: no matching key exchange algorithm', { level: 'handshake' }), target, undefined, undefined, []);
    expect(algo).toMatchObject({ causeId: 'SSH_HANDSHAKE_FAILED', retryable: false });
    expect(algo.evidence.seen).toContain('no matching key exchange');
  });
});
