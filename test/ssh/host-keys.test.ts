// Host keys against a real sshd: unknown → HOST_KEY_UNKNOWN with the fingerprint and a command that
// works; changed → HOST_KEY_MISMATCH at once, one connection, no retry; hashed known_hosts; a host known
// only by its RSA key is asked for that key.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

const ADDRESS = '127.0.0.12';

describeAsRoot('host key verification against a real sshd', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sshd: Sshd;
  let key: ReturnType<typeof makeKeypair>;
  // Retries allowed and quick, so a test would see them if a stop were retried.
  const transport = () => new SshTransport({ authSock: null, retries: 3, retryMinTimeoutMs: 100 });
  let n = 0;
  const target = (knownHosts: string): SshTarget => ({
    name: `node-${++n}`,
    address: ADDRESS,
    port: sshd.port,
    user: OPS_USER,
    identityFile: key.privateKeyPath,
    knownHostsFile: knownHosts,
  });
  const khFile = (text: string) => {
    const f = join(tmp.dir, `known_hosts_${++n}`);
    writeFileSync(f, text);
    return f;
  };

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-hostkeys-');
    key = makeKeypair(tmp.dir, 'id_ed25519');
    sshd = await startSshd({ address: ADDRESS, authorizedKeys: [key.publicKey], hostKeyTypes: ['ed25519', 'rsa'] });
  });

  afterAll(async () => {
    await sshd?.stop();
    tmp?.remove();
  });

  it('stops an unknown host with HOST_KEY_UNKNOWN, its SHA256 fingerprint, and a command that records it', async () => {
    const kh = join(tmp.dir, 'known_hosts_first_contact'); // does not exist yet
    const err = await transport()
      .connect(target(kh))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    const e = err as CauseError;
    expect(e.causeId).toBe('HOST_KEY_UNKNOWN');
    expect(e.retryable).toBe(false);
    // The fingerprint is exactly what ssh-keygen prints for the server's host key.
    const fp = execFileSync('ssh-keygen', ['-lf', join(sshd.dir, 'ssh_host_ed25519_key.pub')])
      .toString()
      .split(' ')[1];
    expect(fp).toMatch(/^SHA256:/);
    expect(e.evidence.excerpt).toBe(`ssh-ed25519 ${fp}`);
    expect(e.message).toContain(fp);
    expect(e.evidence.seen).toContain('console');
    expect(e.evidence.command).toBe(`ssh-keyscan -p ${sshd.port} -t ed25519 ${ADDRESS} >> ${kh}`);
    // Following the advice works: the next connection is accepted.
    execFileSync('sh', ['-c', e.evidence.command!], { stdio: 'pipe' });
    const remote = await transport().connect(target(kh));
    expect((await remote.exec('echo ok')).stdout).toBe('ok\n');
    await remote.close();
  });

  it('stops a changed host key with HOST_KEY_MISMATCH in under 5 s, after exactly one connection, naming both fingerprints', async () => {
    const other = join(tmp.dir, 'other_host_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const recorded = execFileSync('cut', ['-d', ' ', '-f', '1,2', `${other}.pub`])
      .toString()
      .trim();
    const kh = khFile(`# recorded before the host was "reinstalled"\n[${ADDRESS}]:${sshd.port} ${recorded}\n`);
    const before = sshd.connections();
    const started = Date.now();
    const err = await transport()
      .connect(target(kh))
      .catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(CauseError);
    const e = err as CauseError;
    expect(e.causeId).toBe('HOST_KEY_MISMATCH');
    expect(e.retryable).toBe(false);
    expect(elapsed).toBeLessThan(5_000);
    const expectedFp = execFileSync('ssh-keygen', ['-lf', `${other}.pub`])
      .toString()
      .split(' ')[1];
    const seenFp = execFileSync('ssh-keygen', ['-lf', join(sshd.dir, 'ssh_host_ed25519_key.pub')])
      .toString()
      .split(' ')[1];
    expect(e.evidence.excerpt).toContain(`expected: ssh-ed25519 ${expectedFp} (${kh} line 2)`);
    expect(e.evidence.excerpt).toContain(`seen: ssh-ed25519 ${seenFp}`);
    expect(e.evidence.command).toBe(`ssh-keygen -F '[${ADDRESS}]:${sshd.port}' -f ${kh}`);
    // Longer than the retry backoff: a retry would have shown up by now.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(sshd.connections() - before).toBe(1);
  });

  it('never accepts a key marked @revoked', async () => {
    const seen = sshd.hostKeys.ed25519!;
    const kh = khFile(`[${ADDRESS}]:${sshd.port} ${seen}\n@revoked * ${seen}\n`);
    const err = await transport()
      .connect(target(kh))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'HOST_KEY_MISMATCH', retryable: false });
  });

  it('suggests a hashed line (ssh-keyscan -H) for a known_hosts file kept hashed, and the line works', async () => {
    const kh = khFile(`|1|Kw/+J/gb8nTX8syHsm/2jXy47GU=|doF3hevFbVtFBgatP6zcy6SZE64= ${sshd.hostKeys.ed25519}\n`); // some other host
    const err = await transport()
      .connect(target(kh))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'HOST_KEY_UNKNOWN' });
    const command = (err as CauseError).evidence.command!;
    expect(command).toBe(`ssh-keyscan -H -p ${sshd.port} -t ed25519 ${ADDRESS} >> ${kh}`);
    execFileSync('sh', ['-c', command], { stdio: 'pipe' });
    expect(execFileSync('tail', ['-n', '1', kh]).toString()).toMatch(/^\|1\|/);
    const remote = await transport().connect(target(kh));
    await remote.close();
  });

  it('accepts a host recorded in a hashed known_hosts (ssh-keygen -H)', async () => {
    const kh = khFile(sshd.knownHostsLines());
    execFileSync('ssh-keygen', ['-H', '-f', kh], { stdio: 'pipe' });
    expect(execFileSync('cat', [kh]).toString()).toMatch(/^\|1\|/);
    const remote = await transport().connect(target(kh));
    expect((await remote.exec('echo hashed')).stdout).toBe('hashed\n');
    await remote.close();
  });

  it('asks a host known only by its RSA key for that key, instead of calling its Ed25519 key unknown', async () => {
    const kh = khFile(`[${ADDRESS}]:${sshd.port} ${sshd.hostKeys.rsa}\n`);
    const remote = await transport().connect(target(kh));
    expect((await remote.exec('echo rsa')).stdout).toBe('rsa\n');
    await remote.close();
  });
});
