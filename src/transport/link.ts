// One SSH connection (a "link"): opened once per attempt, with our host key verifier, through a jump
// host's connection when there is one, and marked closed the moment the server ends it.
import type { Duplex } from 'node:stream';
import { NodeSSH } from 'node-ssh';
import type { Client, ClientChannel } from 'ssh2';
import { CauseError } from '../errors.ts';
import { Semaphore } from '../util/limit.ts';
import { classifyConnectError, jumpSpec } from './connect-errors.ts';
import { makeHostVerifier, readKnownHosts, type HostKeySeen } from './host-key.ts';
import { chooseAuth } from './identity.ts';
import { preferredHostKeyAlgorithms } from './known-hosts.ts';
import type { TargetEnv } from './target.ts';
import type { SshTarget } from './types.ts';

export interface LinkSettings {
  env: TargetEnv;
  authSock?: string;
  connectTimeoutMs: number;
  retries: number;
  retryMinTimeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  maxChannels: number;
}

/** One live SSH connection. */
export interface Link {
  ssh: NodeSSH;
  client: Client;
  target: SshTarget;
  closed: boolean;
  channels: Semaphore;
  /** Commands running on this connection: each ends (code null) when the connection is lost. */
  running: Set<() => void>;
}

/**
 * A TCP stream to host:port as seen from the far end of the connection (ssh direct-tcpip). With
 * `timeoutMs`, give up when the far end has not connected by then (sshd waits for the kernel's TCP
 * timeout, minutes, on an address that drops packets); a stream that opens after that is closed.
 */
export function forwardOut(link: Link, host: string, port: number, timeoutMs?: number): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            settled = true;
            reject(Object.assign(new Error(`no TCP connection to ${host}:${port} within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
          }, timeoutMs);
    try {
      link.client.forwardOut('127.0.0.1', 0, host, port, (err, ch) => {
        if (timer) clearTimeout(timer);
        if (settled) {
          ch?.close();
          return;
        }
        settled = true;
        if (err) reject(err);
        else resolve(ch);
      });
    } catch (err) {
      if (timer) clearTimeout(timer);
      settled = true;
      reject(err);
    }
  });
}

/** One connection attempt. Throws a CauseError (its `retryable` says whether another attempt may help). */
export async function connectOnce(target: SshTarget, via: Link | undefined, s: LinkSettings, signal?: AbortSignal): Promise<Link> {
  if (signal?.aborted) throw abortReason(signal);
  const entries = readKnownHosts(target.knownHostsFile);
  const auth = chooseAuth(target, { home: s.env.home, authSock: s.authSock });
  let sock: Duplex | undefined;
  if (via) {
    try {
      sock = await forwardOut(via, target.address, target.port, s.connectTimeoutMs);
    } catch (err) {
      throw new CauseError('SSH_UNREACHABLE', {
        host: target.name,
        message: `${target.name} (${target.address}:${target.port}) is not reachable from the jump host ${via.target.name}`,
        retryable: true,
        cause: err,
        evidence: {
          command: `ssh -J ${jumpSpec(via.target)} -p ${target.port} ${target.user}@${target.address} true`,
          seen: `the jump host ${via.target.name} could not open a TCP stream to ${target.address}:${target.port}: ${(err as Error).message}`,
        },
      });
    }
  }
  const seen: { value?: HostKeySeen } = {};
  const ssh = new NodeSSH();
  const onAbort = () => ssh.connection?.destroy(); // end() would wait for a server that may never answer
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await ssh.connect({
      host: target.address,
      port: target.port,
      username: target.user,
      privateKey: auth.privateKey?.toString('utf8'),
      agent: auth.agent,
      sock,
      readyTimeout: s.connectTimeoutMs,
      keepaliveInterval: s.keepaliveIntervalMs,
      keepaliveCountMax: s.keepaliveCountMax,
      hostVerifier: makeHostVerifier(entries, target, seen),
      algorithms: { serverHostKey: preferredHostKeyAlgorithms(entries, target.address, target.port) as never },
    });
  } catch (err) {
    ssh.dispose();
    sock?.destroy();
    if (signal?.aborted) throw abortReason(signal);
    throw classifyConnectError(err, target, via?.target, seen.value, auth.offered);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  const client = ssh.connection!;
  const link: Link = { ssh, client, target, closed: false, channels: new Semaphore(s.maxChannels), running: new Set() };
  // After the handshake node-ssh no longer listens for errors; an unheard 'error' would kill the process.
  client.on('error', () => undefined);
  // The server ended the connection. Through a jump host the stream under it (a channel) reports its
  // end long before its close, so do not wait for the close: every running command ends now (code
  // null), and the next one reconnects.
  const lost = () => {
    if (link.closed) return;
    link.closed = true;
    for (const end of [...link.running]) end();
    sock?.destroy();
    client.destroy();
  };
  client.once('end', lost);
  client.once('close', lost);
  return link;
}

export function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('aborted');
}
