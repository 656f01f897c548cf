// The SSH transport: one connection per host for the whole run (node-ssh over ssh2), strict host keys,
// bounded connection attempts, jump hosts shared by every host behind them.
//
// Connecting: read known_hosts, choose the identity, open the TCP stream (directly, or as a direct-tcpip
// channel through the jump host's connection), then the SSH handshake with our own host key verifier.
// Transient failures (refused, unreachable, timed out, dropped before the handshake) are retried a few
// times with backoff; everything else (host key unknown or changed, login refused, unusable identity) stops
// at once, with the first attempt as the only attempt.
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { NodeSSH } from 'node-ssh';
import pRetry, { AbortError } from 'p-retry';
import type { Client, ClientChannel } from 'ssh2';
import { CauseError } from '../errors.ts';
import { hostKeyError, makeHostVerifier, readKnownHosts, type HostKeySeen } from './host-key.ts';
import { chooseAuth } from './identity.ts';
import { preferredHostKeyAlgorithms } from './known-hosts.ts';
import { EMPTY_SSH_CONFIG, type SshConfig } from './ssh-config.ts';
import { shellQuote, sudoCommand, sudoStopCommand } from './sudo.ts';
import { defaultTargetEnv, resolveJumpHost, type TargetEnv } from './target.ts';
import type { CommandLog, ExecOptions, ExecResult, Remote, SshTarget, Transport } from './types.ts';

export interface SshTransportOptions {
  /** ~/.ssh/config as read by loadSshConfig (for jump host aliases); empty when omitted. */
  sshConfig?: SshConfig;
  /** The operator's home (default: os.homedir()): default identities live in its .ssh. */
  home?: string;
  /** The ssh-agent socket; default process.env.SSH_AUTH_SOCK. Pass null for "no agent". */
  authSock?: string | null;
  /** Budget for one attempt: TCP connect + handshake + login. Default 10 s. */
  connectTimeoutMs?: number;
  /** Further attempts after a transient failure (never after a non-retryable one). Default 2. */
  retries?: number;
  /** First backoff delay; doubles each attempt. Default 500 ms. */
  retryMinTimeoutMs?: number;
  /** SSH keepalive interval (a dead connection is noticed after 3 unanswered). Default 10 s. */
  keepaliveIntervalMs?: number;
  /** Most channels (commands, tunnels) open at once on one connection; sshd's MaxSessions defaults to 10. */
  maxChannels?: number;
}

interface Settings {
  env: TargetEnv;
  authSock?: string;
  connectTimeoutMs: number;
  retries: number;
  retryMinTimeoutMs: number;
  keepaliveIntervalMs: number;
  maxChannels: number;
}

/** One live SSH connection. */
interface Link {
  ssh: NodeSSH;
  client: Client;
  target: SshTarget;
  closed: boolean;
  channels: Semaphore;
  /** Commands running on this connection: each ends (code null) when the connection is lost. */
  running: Set<() => void>;
}

/** A jump host connection shared by the hosts behind it, closed when the last of them closes. */
interface SharedJump {
  target: SshTarget;
  users: number;
  link?: Promise<Link>;
}

export class SshTransport implements Transport {
  private readonly settings: Settings;
  private readonly jumps = new Map<string, SharedJump>();

  constructor(opts: SshTransportOptions = {}) {
    const env = defaultTargetEnv(opts.sshConfig ?? EMPTY_SSH_CONFIG);
    if (opts.home !== undefined) env.home = opts.home;
    this.settings = {
      env,
      authSock: opts.authSock === null ? undefined : (opts.authSock ?? process.env.SSH_AUTH_SOCK) || undefined,
      connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
      retries: opts.retries ?? 2,
      retryMinTimeoutMs: opts.retryMinTimeoutMs ?? 500,
      keepaliveIntervalMs: opts.keepaliveIntervalMs ?? 10_000,
      maxChannels: opts.maxChannels ?? 8,
    };
  }

  /** Connect to a host (through its jump host, if any). Throws a CauseError naming why not. */
  async connect(target: SshTarget, opts: { signal?: AbortSignal; log?: CommandLog } = {}): Promise<SshRemote> {
    const remote = new SshRemote(target, this, opts.log);
    await remote.reconnect(opts.signal);
    return remote;
  }

  /** Close every jump host connection still open (hosts' own connections close with their Remote). */
  async close(): Promise<void> {
    const all = [...this.jumps.values()];
    this.jumps.clear();
    await Promise.all(all.map(async (j) => (await j.link?.catch(() => undefined))?.ssh.dispose()));
  }

  /** @internal Open one connection with bounded retries. */
  async open(target: SshTarget, signal?: AbortSignal): Promise<{ link: Link; release: () => void }> {
    let via: { jump: SharedJump; key: string } | undefined;
    if (target.bastion !== undefined) {
      const jumpTarget = resolveJumpHost(target.bastion, target, this.settings.env);
      via = this.acquireJump(jumpTarget);
    }
    const release = () => {
      if (via) this.releaseJump(via.key);
    };
    try {
      let attempts = 0;
      const link = await pRetry(
        async () => {
          attempts++;
          let jumpLink: Link | undefined;
          try {
            jumpLink = via ? await this.jumpLink(via.jump, signal) : undefined;
          } catch (err) {
            // The jump host had its own bounded attempts: its verdict is final for this host too.
            throw new AbortError(err instanceof Error ? err : new Error(String(err)));
          }
          try {
            return await connectOnce(target, jumpLink, this.settings, signal);
          } catch (err) {
            if (signal?.aborted) throw new AbortError(abortReason(signal));
            if (err instanceof CauseError && err.retryable) throw err;
            throw new AbortError(err instanceof Error ? err : new Error(String(err)));
          }
        },
        {
          retries: this.settings.retries,
          minTimeout: this.settings.retryMinTimeoutMs,
          factor: 2,
          randomize: false,
          signal,
        },
      ).catch((err: unknown) => {
        if (err instanceof CauseError && err.retryable && attempts > 1 && err.evidence.seen) {
          err.evidence.seen += ` (${attempts} attempts)`;
        }
        throw err;
      });
      return { link, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  private acquireJump(target: SshTarget): { jump: SharedJump; key: string } {
    const key = `${target.user}@${target.address}:${target.port}|${target.bastion ?? ''}`;
    let jump = this.jumps.get(key);
    if (!jump) {
      jump = { target, users: 0 };
      this.jumps.set(key, jump);
    }
    jump.users++;
    return { jump, key };
  }

  private releaseJump(key: string): void {
    const jump = this.jumps.get(key);
    if (!jump) return;
    jump.users--;
    if (jump.users <= 0) {
      this.jumps.delete(key);
      void jump.link?.then((l) => l.ssh.dispose(), () => undefined);
    }
  }

  /**
   * The jump host's live connection, opened (or reopened after a drop) on first need. Hosts connecting
   * at the same moment share one opening: the promise is stored before anything is awaited.
   */
  private jumpLink(jump: SharedJump, signal?: AbortSignal): Promise<Link> {
    const current = jump.link;
    if (!current) return this.openJump(jump, signal);
    return current.then(
      (link) => (link.closed ? this.reopenJump(jump, current, signal) : link),
      () => this.reopenJump(jump, current, signal),
    );
  }

  /** Reopen unless another host already did (then use theirs). */
  private reopenJump(jump: SharedJump, stale: Promise<Link>, signal?: AbortSignal): Promise<Link> {
    return jump.link === stale ? this.openJump(jump, signal) : this.jumpLink(jump, signal);
  }

  private openJump(jump: SharedJump, signal?: AbortSignal): Promise<Link> {
    const opening = this.open(jump.target, signal).then(({ link, release }) => {
      // The jump host's own jump host (a chain) stays in use while this link lives.
      link.client.once('close', release);
      return link;
    });
    jump.link = opening;
    opening.catch(() => undefined); // awaited by the callers; a failure must not be "unhandled" here
    return opening;
  }
}

/** The Remote of one host: exec, forward, close, over a connection reopened if it dropped. */
export class SshRemote implements Remote {
  readonly host: string;
  private link?: Link;
  private release?: () => void;
  private connecting?: Promise<Link>;
  private closedByUs = false;

  constructor(
    readonly target: SshTarget,
    private readonly transport: SshTransport,
    private readonly log?: CommandLog,
  ) {
    this.host = target.name;
  }

  /** @internal (Re)open the connection. */
  async reconnect(signal?: AbortSignal): Promise<Link> {
    if (this.closedByUs) throw new Error(`connection to ${this.host} was closed`);
    if (this.link && !this.link.closed) return this.link;
    if (!this.connecting) {
      // The old hold on the jump host is let go only after the new one is taken (open() takes it at
      // once), so a healthy jump connection survives a reconnect of a host behind it.
      const previous = this.release;
      this.release = undefined;
      this.connecting = this.transport.open(this.target, signal).then(
        ({ link, release }) => {
          previous?.();
          this.link = link;
          this.release = release;
          this.connecting = undefined;
          return link;
        },
        (err: unknown) => {
          previous?.();
          this.connecting = undefined;
          throw err;
        },
      );
    }
    return this.connecting;
  }

  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const tag = opts.sudo ? `bootstrap-${randomBytes(4).toString('hex')}` : undefined;
    const line = tag ? sudoCommand(command, tag) : command;
    let link = await this.reconnect(opts.signal);
    // A command under sudo runs as root: sshd cannot signal it for us, so it is stopped as root.
    const onStop = tag ? (l: Link) => () => this.stopTagged(l, tag) : undefined;
    let run = await withChannel(link, () => runChannel(link, line, opts, onStop?.(link)));
    if (run === 'not-started' && link.closed && !opts.signal?.aborted) {
      // The connection dropped between commands (host rebooted, network blip): the command never
      // started, so it is safe to reconnect and run it once more.
      link = await this.reconnect(opts.signal);
      run = await withChannel(link, () => runChannel(link, line, opts, onStop?.(link)));
    }
    if (run === 'not-started') {
      throw new CauseError('SSH_UNREACHABLE', {
        host: this.host,
        message: `lost the SSH connection to ${this.host}`,
        retryable: true,
        evidence: { command: opts.secret ? undefined : line, seen: 'the SSH connection closed before the command could start' },
      });
    }
    const { result } = run;
    this.log?.record({
      host: this.host,
      command: result.command,
      code: result.code,
      durationMs: result.durationMs,
      stdout: result.stdout,
      stderr: result.stderr,
      secret: opts.secret,
    });
    return result;
  }

  /**
   * Stop a tagged sudo command, before its channel closes (while its processes still carry the tag).
   * Runs outside the channel limit (the stopped command still holds its slot); best effort and bounded.
   */
  private async stopTagged(link: Link, tag: string): Promise<void> {
    const run = await runChannel(link, sudoStopCommand(tag), { timeoutMs: 5_000 });
    if (run !== 'not-started') this.log?.record({ host: this.host, ...run.result });
  }

  async forward(host: string, port: number): Promise<Duplex> {
    const link = await this.reconnect();
    try {
      return await forwardOut(link, host, port);
    } catch (err) {
      throw new CauseError('SSH_FORWARD_FAILED', {
        host: this.host,
        message: `${this.host} refused a tunnel to ${host}:${port}`,
        cause: err,
        evidence: {
          command: `ssh -p ${this.target.port} ${this.target.user}@${this.target.address} ss -tln`,
          seen: `direct-tcpip to ${host}:${port} from ${this.host}: ${(err as Error).message}`,
        },
      });
    }
  }

  async close(): Promise<void> {
    this.closedByUs = true;
    const link = this.link ?? (await this.connecting?.catch(() => undefined));
    this.link = undefined;
    if (link) {
      const closed = new Promise<void>((resolve) => (link.closed ? resolve() : link.client.once('close', () => resolve())));
      link.ssh.dispose();
      await Promise.race([closed, delay(2_000)]);
      if (!link.closed) link.client.destroy(); // a host that stopped answering does not say goodbye
    }
    this.release?.();
    this.release = undefined;
  }
}

// ————— one connection attempt —————

async function connectOnce(target: SshTarget, via: Link | undefined, s: Settings, signal?: AbortSignal): Promise<Link> {
  if (signal?.aborted) throw abortReason(signal);
  const entries = readKnownHosts(target.knownHostsFile);
  const auth = chooseAuth(target, { home: s.env.home, authSock: s.authSock });
  let sock: Duplex | undefined;
  if (via) {
    try {
      sock = await forwardOut(via, target.address, target.port);
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
      keepaliveCountMax: 3,
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
        command: target.identityFile ? sshCmd.replace('ssh -v', `ssh -v -i ${shellQuote(target.identityFile)}`) : sshCmd,
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
  const early = /before handshake|No response from server/i.test(message);
  return new CauseError('SSH_HANDSHAKE_FAILED', {
    host: target.name,
    message: `SSH handshake with ${target.name} (${where}) failed: ${message}`,
    retryable: early,
    cause: err,
    evidence: { command: sshCmd, seen: message },
  });
}

function jumpSpec(t: SshTarget): string {
  return `${t.user}@${t.address}:${t.port}`;
}

// ————— channels —————

function forwardOut(link: Link, host: string, port: number): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    try {
      link.client.forwardOut('127.0.0.1', 0, host, port, (err, ch) => (err ? reject(err) : resolve(ch)));
    } catch (err) {
      reject(err);
    }
  });
}

async function withChannel<T>(link: Link, fn: () => Promise<T>): Promise<T> {
  const release = await link.channels.acquire();
  try {
    return await fn();
  } finally {
    release();
  }
}

type ChannelRun = { result: ExecResult; stopped: boolean } | 'not-started';

/** Run one command on a channel; `stopped` when it overran its budget or was aborted. 'not-started' when the channel could not be opened. */
function runChannel(link: Link, command: string, opts: ExecOptions, onStop?: () => Promise<void>): Promise<ChannelRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    if (opts.signal?.aborted) {
      resolve({ result: { command, stdout: '', stderr: '', code: null, durationMs: 0 }, stopped: false });
      return;
    }
    let channel: ClientChannel | undefined;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let code: number | null = null;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (final: number | null, stopped = false) => {
      if (done) return;
      done = true;
      link.running.delete(onLost);
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({
        result: {
          command,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
          code: final,
          durationMs: Date.now() - started,
        },
        stopped,
      });
    };
    // Stop a command that overran or was aborted: stop it as root first if it runs under sudo (onStop),
    // ask sshd to signal it (TERM to its process group, as the SSH user), then close the channel.
    // (Without a terminal nothing sends SIGHUP; a process that ignores TERM may outlive the channel.)
    let stopping = false;
    const stop = async () => {
      if (done || stopping) return;
      stopping = true;
      if (channel && onStop) await Promise.race([onStop().catch(() => undefined), delay(6_000)]);
      if (channel) {
        sendSignal(channel, 'TERM');
        channel.close();
      }
      finish(null, true);
    };
    const onAbort = () => void stop();
    const onLost = () => finish(null, stopping);
    link.running.add(onLost);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.timeoutMs !== undefined) timer = setTimeout(() => void stop(), opts.timeoutMs);
    const onOpen = (e: Error | undefined, ch: ClientChannel) => {
      if (e) {
        if (timer) clearTimeout(timer);
        link.running.delete(onLost);
        opts.signal?.removeEventListener('abort', onAbort);
        if (!done) {
          done = true;
          resolve('not-started');
        }
        return;
      }
      channel = ch;
      if (done) {
        ch.close(); // timed out or aborted while the channel was opening
        return;
      }
      ch.on('data', (d: Buffer) => out.push(d));
      ch.stderr.on('data', (d: Buffer) => err.push(d));
      ch.on('exit', (c: number | null) => {
        code = typeof c === 'number' ? c : null; // killed by a signal: no exit code
      });
      // While a stop is under way the command's own end is part of the stop: still "did not exit on its own".
      ch.on('close', () => finish(stopping ? null : code, stopping));
      ch.on('error', () => finish(null, stopping));
      // stdin: the given bytes, then end-of-file (a command reading stdin must not wait forever).
      if (opts.stdin !== undefined) ch.end(opts.stdin);
      else ch.end();
    };
    try {
      link.client.exec(command, onOpen);
    } catch {
      onOpen(new Error('Not connected'), undefined as never);
    }
  });
}

/**
 * Ask sshd to signal the command's process group (OpenSSH supports the "signal" request since 7.9).
 * ssh2's channel.signal() refuses once our side of the channel is ended — and it always is, since stdin
 * gets its end-of-file at once — so send the request on the protocol directly while the channel is open.
 */
function sendSignal(channel: ClientChannel, name: string): void {
  const ch = channel as unknown as {
    outgoing?: { id: number; state: string };
    _client?: { _protocol?: { signal?: (id: number, name: string) => void } };
  };
  try {
    const proto = ch._client?._protocol;
    if ((ch.outgoing?.state === 'open' || ch.outgoing?.state === 'eof') && typeof proto?.signal === 'function') proto.signal(ch.outgoing.id, name);
    else channel.signal(name);
  } catch {
    // the channel is already closing: nothing left to signal
  }
}

// ————— small helpers —————

class Semaphore {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('aborted');
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
