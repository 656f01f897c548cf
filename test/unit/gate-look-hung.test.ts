// A gate still waiting for a host when its budget and grace have run out names the command it waits for
// (GATE_LOOK_HUNG: which command, on which host, for how long), not only that it did not end; a gate whose
// own code never ends, with nothing in flight, stays GATE_FAILED (a bug, not the host). Which commands a gate
// may be waiting for (src/engine/in-flight.ts): those it could have started, running through the grace.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { Gate, HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { causesOf } from '../../src/errors.ts';
import { InFlight } from '../../src/engine/in-flight.ts';
import { localSessionOptions, localTransport } from '../support/engine-fixture.ts';

const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };

async function runGate(gate: Gate) {
  const dir = mkdtempSync(join(tmpdir(), 'gate-look-hung-'));
  const { transport, remotes } = localTransport(dir);
  const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => [host], concurrency: 1, steps: [], gates: [gate] };
  const events: EngineEvent[] = [];
  const result = await runSession(
    { transport, clock: systemClock, emit: (e) => events.push(e), signal: new AbortController().signal },
    localSessionOptions(dir, phase, [host]),
  );
  await Promise.all(remotes.map((r) => r.close()));
  return causesOf(result.error);
}

it('names the command a gate still waits for, its host and how long it ran, when the budget and grace run out', async () => {
  const [stop, ...rest] = await runGate({
    id: 'answers',
    title: 'the service answers',
    budgetMs: 1_000,
    // A look that ignores its budget: the host never answers (a wedged container runtime).
    run: async (h, ctx) =>
      void (await Promise.all([
        ctx.remote(h).exec('exec sleep 30', { what: 'crictl exec into the agent (sleep 30)' }),
        new Promise((r) => setTimeout(r, 100)).then(() => ctx.remote(h).exec('exec sleep 29')),
      ])),
  });
  expect(rest).toEqual([]);
  expect(stop.causeId).toBe('GATE_LOOK_HUNG');
  expect(stop.host).toBe('node-1');
  expect(stop.evidence.command).toBe('crictl exec into the agent (sleep 30)');
  // Budget 1 s, grace 1 s: the command had run about 2 s when the gate gave up.
  expect(stop.evidence.seen).toMatch(
    /^gate "the service answers" did not end within its budget of 1 s: it was still waiting for this command on node-1, running for [23] s with no answer; also still running: exec sleep 29 on node-1 \([12] s\)$/,
  );
}, 15_000);

it('stays GATE_FAILED when nothing the gate started is still running (its own code did not end)', async () => {
  const [stop] = await runGate({
    id: 'stuck',
    title: 'a gate that never ends',
    budgetMs: 1_000,
    run: () => new Promise(() => undefined),
  });
  expect(stop.causeId).toBe('GATE_FAILED');
  expect(stop.evidence.seen).toBe('gate "a gate that never ends" did not end within its budget of 1 s');
}, 15_000);

it('takes as waited for the commands started since the gate began, or on its host, that ran through the grace; secrets withheld', () => {
  let now = 0;
  const flight = new InFlight(
    () => now,
    (t) => t.replace('s3cret', '[REDACTED]'),
  );
  const older = flight.started('node-2', 'systemctl restart k3s'); // another phase's, before the gate
  now = 1_000;
  flight.started('node-1', 'journalctl -u k3s -f'); // on the gate's host, before the gate
  now = 2_000; // the gate begins
  flight.started('node-3', 'k3s crictl exec … cilium-dbg status');
  flight.started('node-3', 'cat /etc/token-s3cret', true);
  flight.started('node-4', 'echo s3cret');
  now = 64_000;
  const heartbeat = flight.started('node-3', 'touch /run/lock/bootstrap.lock/owner'); // in passing
  now = 64_100;
  expect(flight.waitedFor('node-1', 2_000, 1_000)).toEqual([
    { host: 'node-1', line: 'journalctl -u k3s -f', since: 1_000 },
    { host: 'node-3', line: 'k3s crictl exec … cilium-dbg status', since: 2_000 },
    { host: 'node-3', line: '(withheld: the command holds a secret)', since: 2_000 },
    { host: 'node-4', line: 'echo [REDACTED]', since: 2_000 },
  ]);
  heartbeat();
  older();
  expect(flight.waitedFor('node-2', 0, 1_000).map((r) => r.host)).toEqual(['node-1', 'node-3', 'node-3', 'node-4']);
});
