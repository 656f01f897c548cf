// A phase's local preparation runs before the session dials any host: a stop there (a torn token file)
// costs no connection, no lock and no journal.
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { CauseError } from '../../src/errors.ts';
import { topologyFor } from '../support/engine-fixture.ts';

it('a stop in prepare ends the run before any connection', async () => {
  const dialled: string[] = [];
  const transport = {
    connect: async (t: { host: string }) => {
      dialled.push(t.host);
      throw new Error('no host may be dialled');
    },
    close: async () => undefined,
  };
  const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };
  const phase = {
    id: 'p',
    title: 'a phase with a local stop',
    hosts: () => [host],
    steps: [],
    prepare: async () => ({
      stops: [new CauseError('TOKEN_MALFORMED', { evidence: { command: 'read cluster-token.json', seen: 'not JSON' }, retryable: false })],
    }),
  } as unknown as Phase;
  const events: EngineEvent[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'bootstrap-prepare-'));
  const result = await runSession(
    { transport: transport as any, clock: systemClock, emit: (e) => events.push(e), signal: new AbortController().signal },
    {
      env: 't',
      inventory: {} as any,
      target: (h) => ({ host: h.address }) as any,
      stateDir,
      waivers: [],
      plan: { phases: [phase], topology: topologyFor([host]), check: false, resume: false },
    },
  );
  expect(dialled).toEqual([]);
  expect((result.error as CauseError).causeId).toBe('TOKEN_MALFORMED');
  expect(events.filter((e) => e.type === 'stopped')).toHaveLength(1);
  expect(existsSync(join(stateDir, 'journal.json'))).toBe(false);
});

it('Ctrl-C in check mode says to run the same command again, not --resume (a check run keeps no journal)', async () => {
  const abort = new AbortController();
  const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };
  // The interrupt comes while the run prepares; what it stops is not a named cause, so the run names INTERRUPTED.
  const phase = {
    id: 'p',
    title: 'a phase interrupted while it prepares',
    hosts: () => [host],
    steps: [],
    prepare: async () => {
      abort.abort();
      throw new Error('cancelled');
    },
  } as unknown as Phase;
  const run = (check: boolean) =>
    runSession(
      { transport: { connect: async () => ({}), close: async () => undefined } as any, clock: systemClock, emit: () => undefined, signal: abort.signal },
      {
        env: 't',
        inventory: {} as any,
        target: (h) => ({ host: h.address }) as any,
        stateDir: mkdtempSync(join(tmpdir(), 'bootstrap-int-')),
        waivers: [],
        plan: { phases: [phase], topology: topologyFor([host]), check, resume: false },
      },
    );
  const checked = (await run(true)).error as CauseError;
  expect(checked.causeId).toBe('INTERRUPTED');
  expect(checked.remedy).toMatch(/same command again/);
  expect(checked.remedy).not.toMatch(/--resume to continue/);
  const applied = (await run(false)).error as CauseError;
  expect(applied.causeId).toBe('INTERRUPTED');
  expect(applied.remedy).toMatch(/Rerun with --resume/);
});
