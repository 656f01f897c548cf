// Jump hosts against real sshd servers: a jump host on 127.0.0.21 and two hosts behind it. The hosts
// must see their connection come from the jump host's sshd, the jump host's key is verified like any
// other, and one jump connection serves every host behind it.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, freePort, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

/** The parent pid of a process (from /proc). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The pid owning the local TCP socket 127.0.0.1:<port> → <peer>. */
function socketOwner(localPort: number, peer: string): number | undefined {
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( sport = :${localPort} )`]).toString();
  const line = out.split('\n').find((l) => l.includes(peer));
  const m = line && /pid=(\d+)/.exec(line);
  return m ? Number(m[1]) : undefined;
}

function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid, i = 0; p > 1 && i < 10; p = parentOf(p), i++) if (p === ancestor) return true;
  return false;
}

describeAsRoot('jump host (bastion) against real sshd servers', () => {
  let tmp: ReturnType<typeof tempDir>;
  let jump: Sshd;
  let hostA: Sshd;
  let hostB: Sshd;
  let key: ReturnType<typeof makeKeypair>;
  let knownHosts: string;
  const bastion = () => `${OPS_USER}@${jump.address}:${jump.port}`;
  const target = (s: Sshd, over: Partial<SshTarget> = {}): SshTarget => ({
    name: `node-${s.address}`,
    address: s.address,
    port: s.port,
    user: OPS_USER,
    identityFile: key.privateKeyPath,
    knownHostsFile: knownHosts,
    bastion: bastion(),
    ...over,
  });

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-bastion-');
    key = makeKeypair(tmp.dir, 'id_ed25519');
    [jump, hostA, hostB] = await Promise.all(
      ['127.0.0.21', '127.0.0.22', '127.0.0.23'].map((address) => startSshd({ address, authorizedKeys: [key.publicKey] })),
    );
    knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, jump.knownHostsLines() + hostA.knownHostsLines() + hostB.knownHostsLines());
  });

  afterAll(async () => {
    await Promise.all([jump, hostA, hostB].map((s) => s?.stop()));
    tmp?.remove();
  });

  it("reaches two hosts, connecting at once, through one jump connection; each host sees the connection come from the jump host's sshd", async () => {
    const transport = new SshTransport({ authSock: null });
    // At the same moment, as the engine connects its hosts: still one jump connection.
    const [a, b] = await Promise.all([transport.connect(target(hostA)), transport.connect(target(hostB))]);
    try {
      for (const [remote, host] of [
        [a, hostA],
        [b, hostB],
      ] as const) {
        const r = await remote.exec('echo $SSH_CLIENT; hostname >/dev/null');
        const [fromAddr, fromPort, toPort] = r.stdout.trim().split(' ');
        expect(toPort).toBe(String(host.port));
        // The TCP connection the host accepted is owned by a process of the jump host's sshd, not by us.
        const owner = socketOwner(Number(fromPort), `${host.address}:${host.port}`);
        expect(owner).toBeDefined();
        expect(owner).not.toBe(process.pid);
        expect(descendsFrom(owner!, jump.pid)).toBe(true);
        expect(fromAddr).toBe('127.0.0.1');
      }
      expect(jump.connections()).toBe(1);
      expect(jump.logins()).toBe(1);
      // Many commands later, still one connection everywhere.
      for (let i = 0; i < 10; i++) await Promise.all([a.exec('true'), b.exec('true')]);
      expect([jump.connections(), hostA.connections(), hostB.connections()]).toEqual([1, 1, 1]);
    } finally {
      await a.close();
      await b.close();
      await transport.close();
    }
  });

  it('reconnects a host behind the jump host over the same jump connection', async () => {
    const before = jump.connections();
    const transport = new SshTransport({ authSock: null });
    const a = await transport.connect(target(hostA));
    try {
      const killed = await a.exec('kill -9 $PPID', { timeoutMs: 5_000 }); // the host's session dies
      expect(killed.code).toBeNull();
      expect(killed.durationMs).toBeLessThan(3_000); // noticed at once, not at the command's budget
      await new Promise((r) => setTimeout(r, 200));
      expect((await a.exec('echo back')).stdout).toBe('back\n');
      expect(jump.connections()).toBe(before + 1);
    } finally {
      await a.close();
      await transport.close();
    }
  });

  it('closes the jump connection when the last host behind it closes', async () => {
    const before = jump.connections();
    const transport = new SshTransport({ authSock: null });
    const a = await transport.connect(target(hostA));
    await a.close();
    await new Promise((r) => setTimeout(r, 300));
    expect(jump.connections()).toBe(before + 1);
    expect(jump.log()).toMatch(/Disconnected from user bsops|Received disconnect from/);
    // A later connection opens a fresh jump connection.
    const again = await transport.connect(target(hostA));
    expect((await again.exec('echo again')).stdout).toBe('again\n');
    await again.close();
    expect(jump.connections()).toBe(before + 2);
  });

  it('verifies the host key of a host behind the jump host; unknown → HOST_KEY_UNKNOWN with a scan run on the jump host', async () => {
    const kh = join(tmp.dir, 'known_hosts_jump_only');
    writeFileSync(kh, jump.knownHostsLines());
    const transport = new SshTransport({ authSock: null });
    const err = await transport.connect(target(hostA, { knownHostsFile: kh })).catch((e: unknown) => e);
    await transport.close();
    expect(err).toBeInstanceOf(CauseError);
    const e = err as CauseError;
    expect(e.causeId).toBe('HOST_KEY_UNKNOWN');
    expect(e.host).toBe(`node-${hostA.address}`);
    expect(e.evidence.command).toBe(`ssh -p ${jump.port} ${OPS_USER}@${jump.address} 'ssh-keyscan -p ${hostA.port} -t ed25519 ${hostA.address}' >> ${kh}`);
  });

  it("verifies the jump host's own key: a changed one stops with HOST_KEY_MISMATCH naming the jump host, without retrying", async () => {
    const other = join(tmp.dir, 'other_jump_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const fake = readFileSync(`${other}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
    const kh = join(tmp.dir, 'known_hosts_jump_changed');
    writeFileSync(kh, `[${jump.address}]:${jump.port} ${fake}\n` + hostA.knownHostsLines());
    const before = jump.connections();
    const transport = new SshTransport({ authSock: null, retries: 3, retryMinTimeoutMs: 100 });
    const started = Date.now();
    const err = await transport.connect(target(hostA, { knownHostsFile: kh })).catch((e: unknown) => e);
    await transport.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toMatchObject({ causeId: 'HOST_KEY_MISMATCH', host: jump.address, retryable: false });
    await new Promise((r) => setTimeout(r, 800));
    expect(jump.connections() - before).toBe(1);
    expect(hostA.log()).not.toContain(`port ${jump.port}`); // the host behind was never contacted
  });

  it('names a host the jump host cannot reach SSH_UNREACHABLE, saying so', async () => {
    const port = await freePort(hostA.address);
    const transport = new SshTransport({ authSock: null, retries: 1, retryMinTimeoutMs: 100 });
    const err = await transport.connect(target(hostA, { port })).catch((e: unknown) => e);
    await transport.close();
    expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE' });
    expect((err as CauseError).evidence.seen).toContain(`jump host ${jump.address}`);
    expect((err as CauseError).evidence.command).toContain(`-J ${OPS_USER}@${jump.address}:${jump.port}`);
  });
});
