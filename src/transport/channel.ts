// Commands on one connection: a channel per command, stdin then end-of-file, output
// collected, a budget and Ctrl-C that stop the command, and a cap on channels open at once.
import type { ClientChannel } from 'ssh2';
import { delay } from '../util/delay.ts';
import type { Link } from './link.ts';
import type { ExecOptions, ExecResult } from './types.ts';

/** Run fn holding one of the connection's channel slots. */
export async function withChannel<T>(link: Link, fn: () => Promise<T>): Promise<T> {
  const release = await link.channels.acquire();
  try {
    return await fn();
  } finally {
    release();
  }
}

export type ChannelRun = { result: ExecResult; stopped: boolean } | 'not-started';

/** Run one command on a channel; `stopped` when it overran its budget or was aborted. 'not-started' when the channel could not be opened. */
export function runChannel(link: Link, command: string, opts: ExecOptions, onStop?: () => Promise<void>): Promise<ChannelRun> {
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
    const finish = (final: number | null, stopped = false, lost = false) => {
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
          ...(lost && !stopped && { lost: true as const }),
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
    // The connection is gone (link.ts): the command's end will never be reported.
    const onLost = () => finish(null, stopping, true);
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
      // stdout: collected, or piped to the caller's stream with backpressure (ssh2 stops granting window
      // while the stream is full, so a download holds at most a few buffers in memory).
      const sink = opts.stdoutTo;
      let sinkDone: Promise<void> = Promise.resolve();
      if (sink) {
        sinkDone = new Promise<void>((res) => {
          sink.once('finish', res);
          sink.once('close', res);
          sink.once('error', () => {
            res();
            void stop();
          });
        });
        ch.pipe(sink);
      } else ch.on('data', (d: Buffer) => out.push(d));
      ch.stderr.on('data', (d: Buffer) => err.push(d));
      ch.on('exit', (c: number | null) => {
        code = typeof c === 'number' ? c : null; // killed by a signal: no exit code
      });
      const closed = (final: () => number | null) => {
        if (sink && !sink.writableEnded && !sink.destroyed) {
          ch.unpipe(sink);
          sink.end();
        }
        void sinkDone.then(() => finish(final(), stopping));
      };
      // While a stop is under way the command's own end is part of the stop: still "did not exit on its own".
      ch.on('close', () => closed(() => (stopping ? null : code)));
      ch.on('error', () => closed(() => null));
      // stdin: the given bytes or stream, then end-of-file (a command reading stdin must not wait forever).
      const input = opts.stdin;
      if (input === undefined) ch.end();
      else if (typeof input === 'string' || Buffer.isBuffer(input)) ch.end(input);
      else {
        input.once('error', () => void stop());
        input.pipe(ch);
      }
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
