// A run whose connection to a host is lost mid-run (an SSH drop while a probe batch runs) still leaves no
// lock there: on its way out, the release that cannot reach the host is made over one fresh connection, so
// the next run is not refused with LOCK_HELD until the lock goes stale. A host that does not answer a fresh
// connection either keeps its lock, and the run still ends, within the reconnect's bound.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { CauseError } from '../../src/errors.ts';
import type { ExecResult, Remote, Transport } from '../../src/transport/types.ts';
import { topologyFor } from '../support/engine-fixture.ts';

const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };

/** A connection whose commands answer until `dropped`, then come back lost (code null), as a dead SSH session's do. */
function connection(n: number, seen: string[], state: { dropped: boolean }): Remote {
  return {
    host: 'node-1',
    exec: async (command) => {
      const kind = command.includes('flock') ? 'acquire' : command.includes('.release.') ? 'release' : 'other';
      seen.push(`${n}:${kind}`);
      const r = (stdout: string, code: number | null, lost?: true): ExecResult => ({ command, stdout, stderr: '', code, durationMs: 1, ...(lost && { lost }) });
      if (n === 1 && state.dropped) return r('', null, true);
      return kind === 'acquire' ? r('acquired\n', 0) : r('', 0);
    },
    close: async () => undefined,
  };
}

/** A phase whose one gate finds the connection gone (the drop), as a probe batch cut short does. */
const dropping = (state: { dropped: boolean }) =>
  ({
    id: 'p',
    title: 'a phase whose connection drops',
    hosts: () => [host],
    concurrency: 'serial',
    steps: [],
    gates: [
      {
        id: 'g',
        title: 'a look at the host',
        budgetMs: 10_000,
        run: async () => {
          state.dropped = true;
          throw new CauseError('SSH_UNREACHABLE', { host: 'node-1', evidence: { seen: 'the connection was lost while a command ran' } });
        },
      },
    ],
  }) as unknown as Phase;

async function runWith(transport: Transport, state: { dropped: boolean }) {
  return runSession(
    { transport, clock: systemClock, emit: () => undefined, signal: new AbortController().signal },
    {
      env: 't',
      inventory: {} as any,
      target: (h) => ({ name: h.name, address: h.address, port: 22, user: 'ops', knownHostsFile: '/dev/null' }),
      stateDir: mkdtempSync(join(tmpdir(), 'bootstrap-release-lost-')),
      waivers: [],
      plan: { phases: [dropping(state)], topology: topologyFor([host]), check: false, resume: false },
    },
  );
}

it('releases the lock over a fresh connection when the run lost its own', { timeout: 10_000 }, async () => {
  const seen: string[] = [];
  const state = { dropped: false };
  let n = 0;
  const result = await runWith({ connect: async () => connection(++n, seen, state) }, state);
  expect((result.error as CauseError).causeId).toBe('SSH_UNREACHABLE');
  // The lost connection's release went unanswered; the second connection's release reached the host.
  expect(seen.filter((s) => s.endsWith('release'))).toEqual(['1:release', '2:release']);
});

it('a host that answers no fresh connection keeps its lock, and the run ends anyway', { timeout: 40_000 }, async () => {
  const seen: string[] = [];
  const state = { dropped: false };
  let n = 0;
  const t0 = Date.now();
  const result = await runWith(
    {
      connect: async (_t, o) => {
        if (++n === 1) return connection(1, seen, state);
        // The host is gone: the dial hangs until its signal (the reconnect's bound) says stop.
        return new Promise<Remote>((_r, reject) => o?.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      },
    },
    state,
  );
  expect((result.error as CauseError).causeId).toBe('SSH_UNREACHABLE');
  expect(seen.filter((s) => s.endsWith('release'))).toEqual(['1:release']);
  expect(Date.now() - t0).toBeLessThan(30_000);
});
