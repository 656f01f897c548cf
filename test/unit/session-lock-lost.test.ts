// A holder that loses its host lock (another run took it over: this one was judged dead) stops with
// LOCK_LOST at the refresh that finds out, instead of going on beside the other run with a warning; it
// leaves the journal alone (the other run keeps it).
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import { HEARTBEAT_S } from '../../src/engine/lock.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import type { CauseError } from '../../src/errors.ts';
import type { ExecResult, Remote } from '../../src/transport/types.ts';
import { topologyFor } from '../support/engine-fixture.ts';

afterEach(() => vi.useRealTimers());

it('a refresh that finds another run holding the lock stops the run with LOCK_LOST, not a warning', { timeout: 10_000 }, async () => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };
  const scripts: string[] = [];
  // The host's side of the lock: the acquire succeeds, every refresh finds another run's record.
  const remote: Remote = {
    host: 'node-1',
    exec: async (command) => {
      const kind = command.includes('flock') ? 'acquire' : command.includes('echo lost') ? 'refresh' : 'other';
      scripts.push(kind);
      const r = (stdout: string, code: number): ExecResult => ({ command, stdout, stderr: '', code, durationMs: 1 });
      return kind === 'acquire' ? r('acquired\n', 0) : kind === 'refresh' ? r('lost\n', 3) : r('', 0);
    },
    close: async () => undefined,
  };
  let gateStarted!: () => void;
  const started = new Promise<void>((r) => (gateStarted = r));
  const phase = {
    id: 'p',
    title: 'a phase that works until its signal says stop',
    hosts: () => [host],
    concurrency: 'serial',
    steps: [],
    gates: [
      {
        id: 'long',
        title: 'a long wait',
        budgetMs: 600_000,
        run: (_h: HostRef, _ctx: unknown, signal: AbortSignal) =>
          new Promise<void>((_resolve, reject) => {
            gateStarted();
            signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          }),
      },
    ],
  } as unknown as Phase;
  const events: EngineEvent[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'bootstrap-lock-lost-'));
  const run = runSession(
    { transport: { connect: async () => remote }, clock: systemClock, emit: (e) => events.push(e), signal: new AbortController().signal },
    {
      env: 't',
      inventory: {} as any,
      target: (h) => ({ name: h.name, address: h.address, port: 22, user: 'ops', knownHostsFile: '/dev/null' }),
      stateDir,
      waivers: [],
      plan: { phases: [phase], topology: topologyFor([host]), check: false, resume: false },
    },
  );
  await started;
  vi.advanceTimersByTime(HEARTBEAT_S * 1000);
  const result = await run;
  const err = result.error as CauseError;
  expect(err.causeId).toBe('LOCK_LOST');
  expect(err.host).toBe('node-1');
  expect(events.filter((e) => e.type === 'stopped').map((e) => (e as any).error.cause)).toEqual(['LOCK_LOST']);
  expect(events.filter((e) => e.type === 'warning')).toEqual([]);
  expect(scripts.filter((s) => s === 'refresh')).toHaveLength(1);
  // The journal is the other run's now: this run did not write one on its way out.
  expect(existsSync(join(stateDir, 'journal.json'))).toBe(false);
});
