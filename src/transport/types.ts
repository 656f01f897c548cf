// The contract between the engine and a host. The SSH module implements it for real hosts;
// unit tests implement it in memory. Nothing above this file knows how a command reaches a host.
import type { Readable, Writable } from 'node:stream';

export interface ExecOptions {
  /** Run through `sudo -n` (the inventory user is not root). */
  sudo?: boolean;
  /**
   * The command's standard input (file contents and secrets: never on the command line): bytes, or a
   * stream piped in with backpressure (a large upload is never held in memory), then end-of-file.
   */
  stdin?: string | Buffer | Readable;
  /**
   * Send the command's standard output to this stream instead of collecting it (a large download is never
   * one string): `stdout` of the result is then empty, and exec returns once the stream has finished.
   * A stream that fails stops the command; the caller learns why from its own stream. A command that is
   * stopped (budget, Ctrl-C) leaves the stream open: the caller destroys it.
   */
  stdoutTo?: Writable;
  /** Hard budget for this one command; on expiry the channel is closed and a TimeoutError-like result returned. */
  timeoutMs?: number;
  /** The command or its output holds a secret: the run log records it redacted. */
  secret?: boolean;
  /**
   * It only reads (a probe batch, a `kubectl get`): the run's other probes' answers stay good. Any command
   * not marked so may change the host, and the run asks its probes again (src/engine/probe-memo.ts).
   */
  readOnly?: boolean;
  /** Abort (Ctrl-C): close the channel. */
  signal?: AbortSignal;
  /**
   * How the run log records this command, when not as it ran: a probe batch is one remote execution of
   * many framed commands, and the log shows each of them with its own exit code and decoded output.
   */
  logAs?: (result: ExecResult) => LoggedCommand[];
  /**
   * What the command is, in words, while it runs (CommandLog.started), when its command line does not say:
   * a probe batch is `sh -s` with its probes on standard input.
   */
  what?: string;
}

export interface LoggedCommand {
  command: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ExecResult {
  command: string;
  stdout: string;
  stderr: string;
  /** null when the command did not exit on its own (timeout, abort, channel closed). */
  code: number | null;
  durationMs: number;
  /**
   * The SSH connection was lost while the command ran (code null): the host went down, its cable was
   * pulled, or it left the keepalives unanswered. The command may or may not have run to its end there.
   */
  lost?: true;
}

/** One host, one connection, reused for every step of the run. */
export interface Remote {
  /** The inventory name of the host. */
  readonly host: string;
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
  /** Open a TCP stream to host:port as seen from the remote host (ssh direct-tcpip; for tunnels). */
  forward?(host: string, port: number): Promise<import('node:stream').Duplex>;
  close(): Promise<void>;
}

/** Where a host is and how to reach it, as resolved from the inventory (and ~/.ssh/config). */
export interface SshTarget {
  name: string;
  address: string;
  port: number;
  user: string;
  identityFile?: string;
  knownHostsFile: string;
  /** user@host:port of a jump host, or undefined. */
  bastion?: string;
}

/** Something that logs every remote command (the run log). Secrets arrive already marked. */
export interface CommandLog {
  record(entry: CommandLogEntry): void;
  /**
   * A command starting on `host` (its output is never passed here); the function returned is called once it
   * has ended, however it ended. What a stuck wait names (src/engine/in-flight.ts).
   */
  started?(host: string, command: string, secret?: boolean): () => void;
}

export interface CommandLogEntry {
  host: string;
  command: string;
  code: number | null;
  durationMs: number;
  stdout: string;
  stderr: string;
  secret?: boolean;
  /** The connection was lost while it ran (code null). */
  lost?: true;
  /** The connection closed before the command could start: it did not run. */
  notStarted?: true;
}

export interface Transport {
  connect(target: SshTarget, opts?: { signal?: AbortSignal; log?: CommandLog }): Promise<Remote>;
}
