// A run stops as at a first Ctrl-C when its output loses its reader (`bootstrap … --json | head`): the
// listener of cli/interrupt.ts turns the output's EPIPE into one interrupt, so the session releases its host
// locks instead of the process dying on its next write with them held.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { listenForInterrupts, onFirstAndSecondInterrupt } from '../../cli/interrupt.ts';
import type { Io } from '../../cli/io.ts';

const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

function setup() {
  const signals = new EventEmitter();
  const output = new EventEmitter();
  const err: string[] = [];
  const exits: number[] = [];
  const io = { out: () => undefined, err: (l: string) => err.push(l), isTTY: false, env: {} } as Io;
  const abort = new AbortController();
  const handler = onFirstAndSecondInterrupt(io, abort, ((code: number) => exits.push(code)) as never);
  const stop = listenForInterrupts(handler, { signals, output });
  return { signals, output, err, exits, abort, stop };
}

describe('the output losing its reader', () => {
  it('stops the run once, as a first Ctrl-C does, saying why; the closed output failing again is ignored', () => {
    const s = setup();
    s.output.emit('error', epipe());
    expect(s.abort.signal.aborted).toBe(true);
    expect(s.err).toEqual(['interrupt (the reader of the output went away): finishing the current command, releasing locks (Ctrl-C again to exit at once)']);
    // Every later write to the closed pipe fails too (EPIPE, then the destroyed stream's error): not a second interrupt.
    s.output.emit('error', epipe());
    s.output.emit('error', Object.assign(new Error('Cannot call write after a stream was destroyed'), { code: 'ERR_STREAM_DESTROYED' }));
    expect(s.exits).toEqual([]);
    // Still listening after the run stops listening: the closed output keeps failing until the process ends.
    s.stop();
    expect(() => s.output.emit('error', epipe())).not.toThrow();
  });

  it('Ctrl-C still works as before: the first cancels, the second exits with 130', () => {
    const s = setup();
    s.signals.emit('SIGINT');
    expect(s.abort.signal.aborted).toBe(true);
    expect(s.err).toEqual(['interrupt: finishing the current command, releasing locks (Ctrl-C again to exit at once)']);
    s.signals.emit('SIGINT');
    expect(s.exits).toEqual([130]);
  });

  it('another error of the output is not swallowed; after the run stops listening nothing is left behind', () => {
    const s = setup();
    expect(() => s.output.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' }))).toThrow('write EIO');
    expect(s.abort.signal.aborted).toBe(false);
    s.stop();
    expect(s.signals.listenerCount('SIGINT')).toBe(0);
    expect(s.output.listenerCount('error')).toBe(0);
  });
});
