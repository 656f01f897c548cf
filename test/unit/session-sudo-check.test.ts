// Where a run checks sudo: a run that takes the host locks has its lock, sent through sudo, as its check, so it
// sends no `sudo -n true` of its own (one round trip less per host) and meets a host whose sudo asks for a
// password at the lock (its probes through sudo, sent beside the lock, are refused too and not kept); a --check takes no lock and checks each connection (its phases may send nothing through
// sudo on a host, and its verdict must hold for the run), beside its probes rather than before them. Both name
// SUDO_NEEDS_PASSWORD; so does a probe batch that meets sudo withdrawn later.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import { LOCK_DIR } from '../../src/engine/lock.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { checkSudo } from '../../src/transport/sudo.ts';
import type { ExecOptions, Remote, Transport } from '../../src/transport/types.ts';
import { lookPhase, topologyFor } from '../support/engine-fixture.ts';
import { LocalRemote } from '../support/local-remote.ts';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const hosts: HostRef[] = [
  { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true },
  { name: 'node-2', address: '10.0.0.2', role: 'server', founder: false },
];

/** Hosts that run commands in a local sh (the lock under the test's folder); `refusing`'s sudo wants a password. */
function lab(refusing?: string, how: { sudoProbe?: boolean; refuseAfter?: number; slowCheck?: boolean } = {}) {
  let sudoAnswered = 0;
  // slowCheck: `sudo -n true` answers only once the host's probes were sent (or after 2 s).
  const probed = new Map<string, () => void>();
  const probesSent = (host: string) => new Promise<void>((res) => probed.set(host, res));
  const dir = mkdtempSync(join(tmpdir(), 'session-sudo-'));
  dirs.push(dir);
  const sent: { host: string; command: string; sudo: boolean }[] = [];
  const transport: Transport = {
    connect: async (target, opts) => {
      const local = new LocalRemote(target.name, opts?.log);
      return {
        host: target.name,
        exec: async (command: string, o?: ExecOptions) => {
          sent.push({ host: target.name, command, sudo: o?.sudo === true || command.startsWith('sudo ') });
          if (how.slowCheck && command === 'sudo -n true') {
            await Promise.race([probesSent(target.name), new Promise((res) => setTimeout(res, 2_000))]);
            sent.push({ host: target.name, command: 'sudo -n true: answered', sudo: false });
          } else probed.get(target.name)?.();
          if (target.name === refusing && (o?.sudo || command.startsWith('sudo ')) && sudoAnswered++ >= (how.refuseAfter ?? 0))
            return { command, stdout: '', stderr: 'sudo: a password is required\n', code: 1, durationMs: 2 };
          // Each host its own lock (one shared by both would race their releases of it).
          return local.exec(command.split(LOCK_DIR).join(join(dir, `${target.name}.lock`)), o);
        },
        close: () => local.close(),
      } as Remote;
    },
  };
  const phase = lookPhase(hosts, { up: { command: 'echo up' }, ...(how.sudoProbe !== false && { root: { command: 'id -u', sudo: true } }) });
  const run = (check: boolean) =>
    runSession(
      { transport, clock: systemClock, emit: () => undefined, signal: new AbortController().signal, preflight: (r) => checkSudo(r) },
      {
        env: 't',
        inventory: {} as never,
        target: (h) => ({ name: h.name, address: h.address, port: 22, user: 'ops', knownHostsFile: '' }),
        stateDir: dir,
        waivers: [],
        plan: { phases: [phase], topology: topologyFor(hosts), check, resume: false },
      },
    );
  return { sent, run };
}

it('a run sends no sudo check of its own: its lock, through sudo on each host, is the check', async () => {
  const { sent, run } = lab();
  const result = await run(false);
  expect(result.error).toBeUndefined();
  for (const h of hosts) {
    expect(sent.filter((s) => s.host === h.name && s.sudo && s.command.includes('bootstrap.lock'))).toHaveLength(1);
    expect(sent.filter((s) => s.host === h.name && s.command === 'sudo -n true')).toEqual([]);
  }
});

it("a host whose sudo asks for a password stops the run at the lock, with the connection check's cause", async () => {
  const { run } = lab('node-2');
  const result = await run(false);
  expect(result.error).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-2' });
});

it('a --check takes no lock and checks sudo on each new connection, even where no probe goes through sudo', async () => {
  const { sent, run } = lab('node-2', { sudoProbe: false });
  const result = await run(true);
  expect(result.error).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-2', evidence: { command: 'sudo -n true' } });
  expect(sent.filter((s) => s.command.includes('bootstrap.lock'))).toEqual([]);
});

it('a probe batch that meets sudo withdrawn after the check names SUDO_NEEDS_PASSWORD', async () => {
  // sudo answers the connection's check, then refuses.
  const { run } = lab('node-2', { refuseAfter: 1 });
  const result = await run(true);
  expect(result.error).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-2', evidence: { command: 'sudo -n sh -s (1 read-only probes)' } });
});

it('a --check sends its probes beside the sudo checks, not after them: the first command on a connection pays for the login', async () => {
  const { sent, run } = lab(undefined, { slowCheck: true });
  const started = Date.now();
  const result = await run(true);
  expect(result.error).toBeUndefined();
  for (const h of hosts) {
    const of = sent.filter((x) => x.host === h.name).map((x) => x.command);
    expect(of.findIndex((c) => c.includes('sh -s'))).toBeLessThan(of.indexOf('sudo -n true: answered'));
  }
  expect(Date.now() - started).toBeLessThan(2_000);
});

it("a --check whose sudo check fails stops with the check's cause although its probes went out beside it", async () => {
  const { run } = lab('node-1');
  const result = await run(true);
  expect(result.error).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-1', evidence: { command: 'sudo -n true' } });
});
