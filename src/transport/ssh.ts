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
import pRetry, { AbortError } from 'p-retry';
import { CauseError } from '../errors.ts';
import { runChannel, withChannel } from './channel.ts';
import { recordExec, recordNotStarted } from './command-log.ts';
import { delay } from '../util/delay.ts';
import { abortReason, connectOnce, forwardOut, type Link, type LinkSettings } from './link.ts';
import { EMPTY_SSH_CONFIG, type SshConfig } from './ssh-config.ts';
import { sudoCommand, sudoStopCommand } from './sudo.ts';
import { defaultTargetEnv, resolveJumpHost } from './target.ts';
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
  /** SSH keepalive interval (a dead connection is noticed after KEEPALIVE_DEFAULTS.countMax unanswered). Default 10 s. */
  keepaliveIntervalMs?: number;
  /** Most channels (commands, tunnels) open at once on one connection; sshd's MaxSessions defaults to 10. */
  maxChannels?: number;
}

/** The connection defaults (SshTransportOptions says what each is). */
const CONNECT_DEFAULTS = { connectTimeoutMs: 10_000, retries: 2, retryMinTimeoutMs: 500 } as const;

/** The longest a connection to one host may take with the defaults: every attempt's budget and the backoffs between them. */
export function connectBudgetMs(d: { connectTimeoutMs: number; retries: number; retryMinTimeoutMs: number } = CONNECT_DEFAULTS): number {
  let backoff = 0;
  for (let i = 0; i < d.retries; i++) backoff += d.retryMinTimeoutMs * 2 ** i;
  return (d.retries + 1) * d.connectTimeoutMs + backoff;
}

/**
 * SSH keepalives on every connection: one every intervalMs; a connection that leaves countMax of them
 * unanswered is dead (ssh2's keepaliveInterval and keepaliveCountMax). This is what notices a host that
 * vanished without a word (power cut, cable pulled): nothing on the wire says the connection ended.
 */
export const KEEPALIVE_DEFAULTS = { intervalMs: 10_000, countMax: 3 } as const;

/**
 * The longest a connection to a host that stopped answering stays unnoticed with the defaults: ssh2 sends a
 * keepalive each interval after the last answer and gives up at the one after countMax unanswered, so
 * (countMax + 1) intervals after the last answer. A command running on it then ends as lost
 * (ExecResult.lost), and the step that ran it stops with SSH_UNREACHABLE.
 */
export function lostConnectionBudgetMs(k: { intervalMs: number; countMax: number } = KEEPALIVE_DEFAULTS): number {
  return k.intervalMs * (k.countMax + 1);
}

/** A jump host connection shared by the hosts behind it, closed when the last of them closes. */
interface SharedJump {
  target: SshTarget;
  users: number;
  link?: Promise<Link>;
}

export class SshTransport implements Transport {
  private readonly settings: LinkSettings;
  private readonly jumps = new Map<string, SharedJump>();

  constructor(opts: SshTransportOptions = {}) {
    const env = defaultTargetEnv(opts.sshConfig ?? EMPTY_SSH_CONFIG);
    if (opts.home !== undefined) env.home = opts.home;
    this.settings = {
      env,
      authSock: opts.authSock === null ? undefined : (opts.authSock ?? process.env.SSH_AUTH_SOCK) || undefined,
      connectTimeoutMs: opts.connectTimeoutMs ?? CONNECT_DEFAULTS.connectTimeoutMs,
      retries: opts.retries ?? CONNECT_DEFAULTS.retries,
      retryMinTimeoutMs: opts.retryMinTimeoutMs ?? CONNECT_DEFAULTS.retryMinTimeoutMs,
      keepaliveIntervalMs: opts.keepaliveIntervalMs ?? KEEPALIVE_DEFAULTS.intervalMs,
      keepaliveCountMax: KEEPALIVE_DEFAULTS.countMax,
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
      void jump.link?.then(
        (l) => l.ssh.dispose(),
        () => undefined,
      );
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
    // From here until it has ended (waiting for a channel too): a wait that outlives its budget names it.
    const ended = this.log?.started?.(this.host, opts.what ?? line, opts.secret);
    try {
      return await this.execLine(line, tag, opts);
    } finally {
      ended?.();
    }
  }

  private async execLine(line: string, tag: string | undefined, opts: ExecOptions): Promise<ExecResult> {
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
      recordNotStarted(this.log, this.host, line, opts.secret);
      throw new CauseError('SSH_UNREACHABLE', {
        host: this.host,
        message: `lost the SSH connection to ${this.host}`,
        retryable: true,
        evidence: { command: opts.secret ? undefined : line, seen: 'the SSH connection closed before the command could start' },
      });
    }
    const { result } = run;
    recordExec(this.log, this.host, result, opts);
    return result;
  }

  /**
   * Stop a tagged sudo command, before its channel closes (while its processes still carry the tag).
   * Runs outside the channel limit (the stopped command still holds its slot); best effort and bounded.
   */
  private async stopTagged(link: Link, tag: string): Promise<void> {
    const run = await runChannel(link, sudoStopCommand(tag), { timeoutMs: 5_000 });
    if (run !== 'not-started') recordExec(this.log, this.host, run.result, {});
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
