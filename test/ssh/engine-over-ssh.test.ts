// The engine over real SSH: an idempotent file step run twice (second run 0 changed, check mode after
// it 0 would change), the remote lock, and the CLI stopping on a changed host key in under 5 s.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { LOCK_DIR } from '../../src/engine/lock.ts';
import { fromText } from '../../src/inventory/load.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import { checkSudo } from '../../src/transport/sudo.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { managedFile } from '../../phases/steps/managed-file.ts';
import { cliProcess } from '../support/cli.ts';
import { topologyFor } from '../support/engine-fixture.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

const ADDRESS = '127.0.0.51';

describeAsRoot('the engine over real SSH', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sshd: Sshd;
  let key: ReturnType<typeof makeKeypair>;
  let knownHosts: string;
  let inventoryFile: string;

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-engine-ssh-');
    key = makeKeypair(tmp.dir, 'id_ed25519');
    sshd = await startSshd({ address: ADDRESS, authorizedKeys: [key.publicKey] });
    knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
    mkdirSync(join(tmp.dir, 'artifacts'));
    // a stand-in that answers --version as k3s does, so node-baseline's K3S_VERSION_MISMATCH passes
    writeFileSync(join(tmp.dir, 'artifacts', 'k3s'), "#!/bin/sh\necho 'k3s version v1.33.5+k3s1 (00000000)'\n", { mode: 0o755 });
    const inventory = {
      environment: 'sshtest',
      ssh: { user: OPS_USER, port: sshd.port, identityFile: key.privateKeyPath, knownHostsFile: knownHosts },
      k3s: { version: 'v1.33.5+k3s1', artifacts: join(tmp.dir, 'artifacts') },
      controlPlane: { vip: '127.0.0.9' },
      network: { nodeCidr: '127.0.0.0/24' },
      servers: [{ name: 'node-1', address: ADDRESS, founder: true }],
    };
    inventoryFile = join(tmp.dir, 'sshtest.yaml');
    writeFileSync(inventoryFile, stringify(inventory));
  });

  afterAll(async () => {
    await sshd?.stop();
    tmp?.remove();
  });

  const target = (): SshTarget => ({
    name: 'node-1',
    address: ADDRESS,
    port: sshd.port,
    user: OPS_USER,
    identityFile: key.privateKeyPath,
    knownHostsFile: knownHosts,
  });
  const host: HostRef = { name: 'node-1', address: ADDRESS, role: 'server', founder: true };

  async function runFileStep(check: boolean) {
    const path = join(tmp.dir, 'managed', 'motd');
    const phase: Phase = {
      id: 'files',
      title: 'files',
      needs: [],
      hosts: () => [host],
      concurrency: 1,
      steps: [
        managedFile({
          id: 'motd',
          title: 'motd',
          path: () => path,
          local: async () => undefined,
          content: () => 'managed by bootstrap\n',
          mode: '0644',
          owner: 'root:root',
        }),
      ],
    };
    const events: EngineEvent[] = [];
    const transport = new SshTransport({ authSock: null, home: tmp.dir });
    const loaded = fromText(readFileSync(inventoryFile, 'utf8'), inventoryFile, tmp.dir);
    const result = await runSession(
      { transport, clock: systemClock, emit: (e) => events.push(e), signal: new AbortController().signal, preflight: (r) => checkSudo(r) },
      {
        env: 'sshtest',
        inventory: loaded,
        target,
        stateDir: join(tmp.dir, 'state'),
        waivers: [],
        plan: { phases: [phase], topology: topologyFor([host]), check, resume: false },
      },
    );
    await transport.close();
    return { result, events, path };
  }

  it('runs an idempotent file step twice: changed, then 0 changed; check mode after it: 0 would change', async () => {
    const first = await runFileStep(false);
    expect(first.result.error).toBeUndefined();
    expect(first.result.summary).toMatchObject({ changed: 1 });
    expect(readFileSync(first.path, 'utf8')).toBe('managed by bootstrap\n');
    const second = await runFileStep(false);
    expect(second.result.summary).toMatchObject({ ok: 1, changed: 0 });
    const check = await runFileStep(true);
    expect(check.result.summary).toMatchObject({ ok: 1, wouldChange: 0 });
    // The lock was taken and released: none is left on the host.
    expect(() => readFileSync(`${LOCK_DIR}/owner`)).toThrow();
    // The run log recorded the remote commands, and each probe of a batch as text: its command, exit
    // code and decoded output (the motd's content, not a base64 frame).
    const log = readFileSync(first.result.logFile, 'utf8');
    expect(log).toMatch(/node-1 exit=0 \d+ms\n {2}\$ sudo -n sh -c/);
    // The release is the SSH user's own (the lock is chowned to it): no sudo started for it.
    expect(log).toMatch(/node-1 exit=0 \d+ms\n {2}\$ sh -c 'd=\S+; me=\S+; g="\$d\.release\.\$me"/);
    expect(log).not.toMatch(/sudo -n sh -c 'sh -c '\\''d=\S+; me=\S+; g="\$d\.release/);
    expect(readFileSync(second.result.logFile, 'utf8')).toMatch(
      /node-1 exit=0 \d+ms\n {2}\$ sudo if \[ -f \S+ \]; then stat -c '%a' \S+ && cat \S+; else exit 1; fi {3}# probe (?:\S+\.)?0\.file\n {2}stdout:\n {4}644\n {4}managed by bootstrap\n/,
    );
    expect(log).not.toContain('__bootstrap_probe__');
  });

  it('stops with LOCK_HELD when another run holds the lock', async () => {
    mkdirSync(LOCK_DIR, { recursive: true });
    writeFileSync(`${LOCK_DIR}/owner`, `other-run ${Math.floor(Date.now() / 1000)} someone@elsewhere\n`);
    // The journal of the run that holds the lock, which the refused run must leave as it is.
    const journal = join(tmp.dir, 'state', 'journal.json');
    mkdirSync(join(tmp.dir, 'state'), { recursive: true });
    const holders = JSON.stringify({ runId: 'other-run', startedAt: new Date().toISOString(), finished: false, completed: { files: { 'node-1': {} } } });
    writeFileSync(journal, holders);
    try {
      const r = await runFileStep(false);
      expect(r.events).toContainEqual(expect.objectContaining({ type: 'stopped', error: expect.objectContaining({ cause: 'LOCK_HELD', host: 'node-1' }) }));
      expect(JSON.stringify(r.events)).toContain('someone@elsewhere');
      expect(readFileSync(journal, 'utf8')).toBe(holders);
      expect(readFileSync(`${LOCK_DIR}/owner`, 'utf8')).toMatch(/^other-run /);
    } finally {
      const { rmSync } = await import('node:fs');
      rmSync(LOCK_DIR, { recursive: true, force: true });
    }
  });

  it('bootstrap stops on a changed host key with HOST_KEY_MISMATCH in under 5 s, exit 1, one attempt', async () => {
    const other = makeKeypair(tmp.dir, 'fake_host_key');
    const badKnownHosts = join(tmp.dir, 'known_hosts_changed');
    writeFileSync(badKnownHosts, `[${ADDRESS}]:${sshd.port} ${other.publicKey.split(' ').slice(0, 2).join(' ')}\n`);
    const inv = readFileSync(inventoryFile, 'utf8').replace(knownHosts, badKnownHosts);
    const file = join(tmp.dir, 'changed', 'sshtest.yaml');
    mkdirSync(join(tmp.dir, 'changed'), { recursive: true });
    writeFileSync(file, inv);
    // The bound is on the stop, not on starting Node: a process that only prints the cause catalogue, timed just
    // before, is taken off (on a loaded CI machine that start alone can take seconds).
    const s0 = Date.now();
    expect(cliProcess(['causes']).code).toBe(0);
    const startMs = Date.now() - s0;
    const before = sshd.connections();
    const t0 = Date.now();
    const r = cliProcess(['--inventory', file, '--only', 'node-baseline', '--check'], { BOOTSTRAP_STATE_DIR: join(tmp.dir, 'state2'), HOME: tmp.dir });
    const ms = Date.now() - t0;
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/✖ HOST_KEY_MISMATCH on node-1/);
    expect(ms - startMs).toBeLessThan(5_000);
    expect(sshd.connections() - before).toBe(1);
  });
});
