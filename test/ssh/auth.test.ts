// Login and sudo against a real sshd, and hosts that do not answer: SSH_AUTH_FAILED (never retried),
// SSH_IDENTITY_UNUSABLE, SUDO_NEEDS_PASSWORD, SSH_UNREACHABLE (retried, bounded).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import { checkSudo } from '../../src/transport/sudo.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, freePort, makeKeypair, OPS_USER, PW_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

const ADDRESS = '127.0.0.13';

describeAsRoot('SSH login, sudo and reachability against a real sshd', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sshd: Sshd;
  let key: ReturnType<typeof makeKeypair>;
  let knownHosts: string;
  const transport = () => new SshTransport({ authSock: null, retries: 2, retryMinTimeoutMs: 100 });
  const target = (over: Partial<SshTarget> = {}): SshTarget => ({
    name: 'node-1',
    address: ADDRESS,
    port: sshd.port,
    user: OPS_USER,
    identityFile: key.privateKeyPath,
    knownHostsFile: knownHosts,
    ...over,
  });

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-auth-');
    key = makeKeypair(tmp.dir, 'id_ed25519');
    sshd = await startSshd({ address: ADDRESS, authorizedKeys: [key.publicKey] });
    knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
  });

  afterAll(async () => {
    await sshd?.stop();
    tmp?.remove();
  });

  it('stops a refused login with SSH_AUTH_FAILED after one connection, without retrying', async () => {
    const stranger = makeKeypair(tmp.dir, 'id_not_authorized');
    const before = sshd.connections();
    const err = await transport()
      .connect(target({ identityFile: stranger.privateKeyPath }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect(err).toMatchObject({ causeId: 'SSH_AUTH_FAILED', retryable: false, host: 'node-1' });
    const e = err as CauseError;
    expect(e.evidence.seen).toContain(`user ${OPS_USER}`);
    expect(e.evidence.seen).toContain(stranger.privateKeyPath);
    expect(e.evidence.command).toContain(`-i ${stranger.privateKeyPath}`);
    await new Promise((r) => setTimeout(r, 800));
    expect(sshd.connections() - before).toBe(1);
    expect(sshd.log()).toMatch(/Failed publickey for bsops|Connection closed by authenticating user bsops/);
  });

  it('names an identity file that does not exist SSH_IDENTITY_UNUSABLE, before connecting', async () => {
    const before = sshd.connections();
    const missing = join(tmp.dir, 'no-such-key');
    const err = await transport()
      .connect(target({ identityFile: missing }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'SSH_IDENTITY_UNUSABLE' });
    expect((err as CauseError).evidence.seen).toContain(missing);
    expect(sshd.connections()).toBe(before);
  });

  it('names a passphrase-protected identity file SSH_IDENTITY_UNUSABLE and points to the agent', async () => {
    const locked = join(tmp.dir, 'id_locked');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'secret phrase', '-f', locked]);
    const err = await transport()
      .connect(target({ identityFile: locked }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'SSH_IDENTITY_UNUSABLE' });
    expect((err as CauseError).message).toContain('ssh-add');
  });

  it('falls back to ~/.ssh/id_ed25519 when no identity is named and there is no agent', async () => {
    const home = join(tmp.dir, 'home');
    execFileSync('mkdir', ['-p', join(home, '.ssh')]);
    execFileSync('cp', [key.privateKeyPath, join(home, '.ssh', 'id_ed25519')]);
    const t = new SshTransport({ authSock: null, home });
    const remote = await t.connect(target({ identityFile: undefined }));
    expect((await remote.exec('id -un')).stdout).toBe(`${OPS_USER}\n`);
    await remote.close();
    const empty = new SshTransport({ authSock: null, home: join(tmp.dir, 'empty-home') });
    await expect(empty.connect(target({ identityFile: undefined }))).rejects.toMatchObject({ causeId: 'SSH_AUTH_FAILED' });
  });

  it('uses the ssh-agent when no identity file is named', async () => {
    const sock = join(tmp.dir, 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
      execFileSync('ssh-add', ['-q', key.privateKeyPath], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'pipe' });
      const t = new SshTransport({ authSock: sock, home: join(tmp.dir, 'no-default-keys') });
      const remote = await t.connect(target({ identityFile: undefined }));
      expect((await remote.exec('id -un')).stdout).toBe(`${OPS_USER}\n`);
      await remote.close();
    } finally {
      agent.kill();
    }
  });

  it('gives up at once when the run is aborted (Ctrl-C) while connecting', async () => {
    const port = await freePort(ADDRESS);
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(port, ADDRESS, r));
    try {
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error('interrupted')), 200);
      const started = Date.now();
      const t = new SshTransport({ authSock: null, connectTimeoutMs: 10_000 });
      await expect(t.connect(target({ port }), { signal: ac.signal })).rejects.toThrow('interrupted');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      silent.close();
    }
  });

  it('passes the sudo check for a user with passwordless sudo', async () => {
    const remote = await transport().connect(target());
    await expect(checkSudo(remote)).resolves.toBeUndefined();
    await remote.close();
  });

  it('stops a user whose sudo asks for a password with SUDO_NEEDS_PASSWORD, with the evidence', async () => {
    const remote = await transport().connect(target({ name: 'node-pw', user: PW_USER }));
    try {
      const err = await checkSudo(remote).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CauseError);
      expect(err).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-pw' });
      const e = err as CauseError;
      expect(e.evidence).toMatchObject({ command: 'sudo -n true', exitCode: 1 });
      expect(e.evidence.excerpt).toMatch(/a password is required/);
      // The user itself works; only root is out of reach.
      expect((await remote.exec('id -un')).stdout).toBe(`${PW_USER}\n`);
    } finally {
      await remote.close();
    }
  });

  it('stops a refused port with SSH_UNREACHABLE after a bounded number of attempts', async () => {
    const port = await freePort(ADDRESS);
    const started = Date.now();
    const err = await transport()
      .connect(target({ port }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE', retryable: true });
    expect((err as CauseError).evidence.seen).toMatch(/ECONNREFUSED.*\(3 attempts\)/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up on a port that accepts but never speaks SSH within the connect timeout, retrying a bounded number of times', async () => {
    const port = await freePort(ADDRESS);
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(port, ADDRESS, r));
    try {
      const t = new SshTransport({ authSock: null, connectTimeoutMs: 400, retries: 1, retryMinTimeoutMs: 100 });
      const started = Date.now();
      const err = await t.connect(target({ port })).catch((e: unknown) => e);
      expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE' });
      expect(sockets).toHaveLength(2);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});
