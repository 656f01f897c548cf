// The SSH transport against a real OpenSSH server: commands, sudo, stdin, exit codes, time budgets,
// the run log, one connection for everything, and tunnels.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { KEEPALIVE_DEFAULTS, lostConnectionBudgetMs, SshTransport, type SshRemote } from '../../src/transport/ssh.ts';
import type { CommandLog, SshTarget } from '../../src/transport/types.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, freePort, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

const ADDRESS = '127.0.0.11';

describeAsRoot('SSH transport against a real sshd', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sshd: Sshd;
  let target: SshTarget;
  let transport: SshTransport;
  let remote: SshRemote;
  const logged: Parameters<CommandLog['record']>[0][] = [];
  // What the run log is told is in flight (CommandLog.started): each start, and whether it has ended.
  const inFlight: { host: string; command: string; secret?: boolean; ended: boolean }[] = [];

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-transport-');
    const key = makeKeypair(tmp.dir, 'id_ed25519');
    sshd = await startSshd({ address: ADDRESS, authorizedKeys: [key.publicKey] });
    const knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
    target = { name: 'node-1', address: ADDRESS, port: sshd.port, user: OPS_USER, identityFile: key.privateKeyPath, knownHostsFile: knownHosts };
    transport = new SshTransport({ authSock: null, home: tmp.dir });
    remote = await transport.connect(target, {
      log: {
        record: (e) => logged.push(e),
        started: (host, command, secret) => {
          const entry = { host, command, secret, ended: false };
          inFlight.push(entry);
          return () => (entry.ended = true);
        },
      },
    });
  });

  afterAll(async () => {
    await remote?.close();
    await transport?.close();
    await sshd?.stop();
    tmp?.remove();
  });

  it('runs a command as the SSH user and returns its output and exit code', async () => {
    const r = await remote.exec('echo out; echo err >&2; id -un; exit 3');
    expect(r).toMatchObject({ stdout: `out\n${OPS_USER}\n`, stderr: 'err\n', code: 3 });
    expect((await remote.exec('true')).code).toBe(0);
    expect((await remote.exec('false')).code).toBe(1);
  });

  it('runs compound commands as root through sudo -n', async () => {
    const r = await remote.exec('id -u && id -un | tr a-z A-Z; echo "$((6*7))" > /dev/null; exit 0', { sudo: true });
    expect(r).toMatchObject({ stdout: '0\nROOT\n', code: 0 });
    expect(r.command).toMatch(/^sudo -n sh -c '/);
    // Quotes inside the command survive the wrapping.
    expect((await remote.exec(`printf '%s\\n' "it's" 'a "b"'`, { sudo: true })).stdout).toBe(`it's\na "b"\n`);
  });

  it('carries stdin: text, a megabyte of binary, and into a root-owned file through sudo', async () => {
    expect((await remote.exec('cat', { stdin: 'hello\nworld' })).stdout).toBe('hello\nworld');
    const big = Buffer.alloc(1 << 20, 0xa5);
    expect((await remote.exec('wc -c', { stdin: big })).stdout.trim()).toBe(String(1 << 20));
    const file = `/root/bootstrap-ssh-test-${process.pid}`;
    const w = await remote.exec(`umask 077; cat > ${file} && stat -c '%U %a' ${file} && cat ${file}; rm -f ${file}`, {
      sudo: true,
      stdin: 'secret-ish\n',
      secret: true,
    });
    expect(w).toMatchObject({ code: 0, stdout: 'root 600\nsecret-ish\n' });
    // A command that reads stdin without being given any sees end-of-file instead of hanging.
    expect((await remote.exec('cat; echo done', { timeoutMs: 5_000 })).stdout).toBe('done\n');
  });

  it('stops a command at its time budget: code null within the bound, the process killed, the connection still usable', async () => {
    const started = Date.now();
    const r = await remote.exec('sleep 37', { timeoutMs: 300 });
    expect(r.code).toBeNull();
    expect(Date.now() - started).toBeLessThan(3_000);
    const viaSudo = await remote.exec('sleep 38', { timeoutMs: 300, sudo: true });
    expect(viaSudo.code).toBeNull();
    await new Promise((res) => setTimeout(res, 500));
    const left = await remote.exec('pgrep -fa "^sleep 3[78]$" || true');
    expect(left.stdout).toBe('');
    expect((await remote.exec('echo still here')).stdout).toBe('still here\n');
  });

  it('stops a command on abort (Ctrl-C)', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const started = Date.now();
    const r = await remote.exec('sleep 39', { signal: ac.signal });
    expect(r.code).toBeNull();
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('records every command in the run log, marking secrets, never stdin', async () => {
    logged.length = 0;
    await remote.exec('echo logged; exit 4');
    await remote.exec('cat >/dev/null', { stdin: 'TOKEN-VALUE', secret: true });
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({ host: 'node-1', command: 'echo logged; exit 4', code: 4, stdout: 'logged\n' });
    expect(logged[0].durationMs).toBeGreaterThanOrEqual(0);
    expect(logged[1]).toMatchObject({ secret: true });
    expect(JSON.stringify(logged)).not.toContain('TOKEN-VALUE');
  });

  it('tells the run log what is in flight: each command from its start until it has ended, named as `what` says', async () => {
    inFlight.length = 0;
    const slow = remote.exec('sleep 0.5; echo done', { sudo: true });
    await new Promise((r) => setTimeout(r, 200));
    // Started and still running: a gate past its budget would name it (src/engine/in-flight.ts).
    expect(inFlight).toHaveLength(1);
    expect(inFlight[0]).toMatchObject({ host: 'node-1', ended: false });
    expect(inFlight[0].command).toMatch(/^sudo -n sh -c '.*sleep 0\.5; echo done/);
    expect((await slow).stdout).toBe('done\n');
    expect(inFlight[0].ended).toBe(true);
    await remote.exec('sh -s', { stdin: 'true\n', what: 'sh -s (1 read-only probe: true)', secret: true });
    expect(inFlight[1]).toMatchObject({ command: 'sh -s (1 read-only probe: true)', secret: true, ended: true });
  });

  it('uses one TCP connection for every command, sequential or concurrent', async () => {
    for (let i = 0; i < 20; i++) await remote.exec(`echo ${i}`);
    const outs = await Promise.all(Array.from({ length: 25 }, (_, i) => remote.exec(`echo ${i}`)));
    expect(outs.map((o) => o.stdout)).toEqual(Array.from({ length: 25 }, (_, i) => `${i}\n`));
    expect(sshd.connections()).toBe(1);
    expect(sshd.logins()).toBe(1);
  });

  it("forwards a TCP stream to a port on the host's loopback (the Kubernetes API tunnel)", async () => {
    const port = await freePort(ADDRESS);
    const server: Server = createServer((s) => s.pipe(s)); // echo
    await new Promise<void>((res) => server.listen(port, ADDRESS, res));
    try {
      const stream = await remote.forward(ADDRESS, port);
      const reply = new Promise<string>((res) => stream.once('data', (d: Buffer) => res(d.toString())));
      stream.write('ping through ssh');
      expect(await reply).toBe('ping through ssh');
      stream.destroy();
    } finally {
      server.close();
    }
  });

  it('names a refused tunnel SSH_FORWARD_FAILED', async () => {
    const port = await freePort(ADDRESS); // nothing listens there
    const err = await remote.forward(ADDRESS, port).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect(err).toMatchObject({ causeId: 'SSH_FORWARD_FAILED', host: 'node-1' });
    expect((err as CauseError).evidence.seen).toContain(`${ADDRESS}:${port}`);
  });

  it('reconnects once when the connection dropped between commands (the host key is checked again)', async () => {
    const before = sshd.connections();
    // Kill this connection's sshd session process from inside: the command never returns normally.
    const killed = await remote.exec('kill -9 $PPID', { timeoutMs: 5_000 });
    expect(killed.code).toBeNull();
    expect(killed.lost).toBe(true); // lost, not stopped at its budget: the step names SSH_UNREACHABLE
    expect(killed.durationMs).toBeLessThan(3_000); // noticed at once, not at the command's budget
    await new Promise((res) => setTimeout(res, 200));
    expect((await remote.exec('echo back')).stdout).toBe('back\n');
    expect(sshd.connections()).toBe(before + 1);
  });

  it('notices a connection whose host stopped answering (no word on the wire) within lostConnectionBudgetMs: the command ends lost', async () => {
    // The session's own sshd process frozen: the TCP connection stays open, nothing answers, as after a
    // power cut or a pulled cable. Keepalives 4 times a second, so the budget is 1 s instead of 40 s.
    const keepalive = { intervalMs: 250, countMax: KEEPALIVE_DEFAULTS.countMax };
    const quick = new SshTransport({ authSock: null, home: tmp.dir, keepaliveIntervalMs: keepalive.intervalMs });
    const r = await quick.connect(target);
    const session = Number((await r.exec('echo $PPID')).stdout.trim());
    expect(session).toBeGreaterThan(1);
    process.kill(session, 'SIGSTOP');
    try {
      const started = Date.now();
      const frozen = await r.exec('echo never', { timeoutMs: 30_000 });
      expect(frozen).toMatchObject({ code: null, lost: true });
      expect(Date.now() - started).toBeLessThanOrEqual(lostConnectionBudgetMs(keepalive) + 500);
    } finally {
      process.kill(session, 'SIGKILL');
      await r.close();
      await quick.close();
    }
    // The default: 3 unanswered keepalives 10 s apart, noticed at the 4th interval.
    expect(lostConnectionBudgetMs()).toBe(40_000);
  });

  it('leaves no test processes behind on the server user', () => {
    // The remote shells of finished commands are gone (only the live session's sshd remains).
    const ps = execFileSync('sh', ['-c', `pgrep -u ${OPS_USER} -fa '^sleep 3[789]$' || true`]).toString();
    expect(ps).toBe('');
  });
});
