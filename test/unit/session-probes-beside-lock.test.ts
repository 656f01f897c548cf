// A run sends its phases' probes beside its lock acquires, each batch (as the user, through sudo) led by the
// lock's state. The answers are kept only when each host's acquire shows that no other run held or took the
// lock since they were read; otherwise the phases ask again. Real shells, a lock folder per host.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import { acquireLock, LOCK_DIR, releaseLock } from '../../src/engine/lock.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import type { ExecOptions, Remote, Transport } from '../../src/transport/types.ts';
import { lookPhase, topologyFor } from '../support/engine-fixture.ts';
import { LocalRemote } from '../support/local-remote.ts';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const hosts: HostRef[] = [
  { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true },
  { name: 'node-2', address: '10.0.0.2', role: 'server', founder: false },
];

/**
 * Two hosts in local shells. Each host's acquire waits until its batch as the user has answered; `intruder`:
 * on that host, another run takes and releases the lock in that moment (between the probes and the acquire).
 */
function lab(intruder?: string) {
  const root = mkdtempSync(join(tmpdir(), 'probes-beside-lock-'));
  dirs.push(root);
  const sent: { host: string; what: string }[] = [];
  const userBatchDone = new Map(
    hosts.map((h) => {
      let resolve!: () => void;
      return [h.name, { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() }];
    }),
  );
  const transport: Transport = {
    connect: async (target, opts) => {
      const local = new LocalRemote(target.name, opts?.log);
      const dir = join(root, target.name);
      mkdirSync(dir, { recursive: true });
      const own = (command: string) => command.split(LOCK_DIR).join(join(dir, 'bootstrap.lock'));
      const remote = {
        host: target.name,
        exec: async (command: string, o?: ExecOptions) => {
          const sudo = o?.sudo === true;
          const acquire = command.includes('acquire') && command.includes('flock');
          const what = acquire ? 'acquire' : command === 'sh -s' ? `batch${sudo ? ' (sudo)' : ''}` : command.includes('.release.') ? 'release' : command;
          sent.push({ host: target.name, what });
          if (acquire) {
            await userBatchDone.get(target.name)!.promise;
            if (target.name === intruder) {
              const other = { host: target.name, exec: (c: string, oo?: ExecOptions) => local.exec(own(c), oo), close: async () => undefined } as Remote;
              await acquireLock(other, { runId: 'another-run', who: 'someone@elsewhere' });
              await releaseLock(other, 'another-run');
            }
          }
          // The batches carry their script on stdin: the lock state they read is this host's too.
          const res = await local.exec(own(command), o && { ...o, ...(typeof o.stdin === 'string' && { stdin: own(o.stdin) }) });
          if (what === 'batch') userBatchDone.get(target.name)!.resolve();
          return res;
        },
        close: () => local.close(),
      } as Remote;
      return remote;
    },
  };
  const asked: string[] = [];
  const phase = lookPhase(hosts, { up: { command: 'echo up' }, root: { command: 'id -u', sudo: true } }, (host, probe) =>
    asked.push(`${host.name} ${probe.up.stdout.trim()} ${probe.root.code}`),
  );
  const run = () =>
    runSession(
      { transport, clock: systemClock, emit: () => undefined, signal: new AbortController().signal },
      {
        env: 't',
        inventory: {} as never,
        target: (h) => ({ name: h.name, address: h.address, port: 22, user: 'ops', knownHostsFile: '' }),
        stateDir: root,
        waivers: [],
        plan: { phases: [phase], topology: topologyFor(hosts), check: false, resume: false },
      },
    );
  const of = (host: string) => sent.filter((s) => s.host === host).map((s) => s.what);
  return { of, asked, run };
}

it('the probes go out before the acquire answers, and the phase asks nothing more', async () => {
  const { of, asked, run } = lab();
  const result = await run();
  expect(result.error).toBeUndefined();
  // Each acquire answered only once its host's batch as the user had (the fixture holds it until then).
  for (const h of hosts) {
    expect([...of(h.name)].sort()).toEqual(['acquire', 'batch', 'batch (sudo)', 'release']);
    expect(of(h.name).at(-1)).toBe('release');
  }
  expect(asked.sort()).toEqual(['node-1 up 0', 'node-2 up 0']);
});

it('another run that took the lock between the probes and the acquire: the phase asks again on every host', async () => {
  const { of, asked, run } = lab('node-2');
  const result = await run();
  expect(result.error).toBeUndefined();
  for (const h of hosts) expect([...of(h.name)].sort()).toEqual(['acquire', 'batch', 'batch', 'batch (sudo)', 'batch (sudo)', 'release']);
  expect(asked.sort()).toEqual(['node-1 up 0', 'node-2 up 0']);
});
