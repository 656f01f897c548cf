// The SSH transport against the lab's Debian hosts (systemd, their own sshd on port 22, the operator
// on the lab's .1): the same promises as test/ssh, on machines that look like the real ones.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { SshTransport, type SshRemote } from '../../src/transport/ssh.ts';
import { checkSudo } from '../../src/transport/sudo.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { fault } from '../../lab/api.ts';
import { NET } from '../../lab/config.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hostExec, hosts, paths } from '../support/lab.ts';
import { tempDir } from '../support/sshd.ts';

describeAsRoot('SSH transport against lab hosts', () => {
  let tmp: ReturnType<typeof tempDir>;
  const opened: SshRemote[] = [];
  const target = (name: string, over: Partial<SshTarget> = {}): SshTarget => {
    const h = hosts().find((x) => x.name === name)!;
    return { name, address: h.address, port: 22, user: 'ops', identityFile: paths.key, knownHostsFile: paths.knownHosts, ...over };
  };
  const connect = async (t: SshTarget, transport = new SshTransport({ authSock: null })) => {
    const r = await transport.connect(t);
    opened.push(r);
    return r;
  };

  beforeAll(async () => {
    await ensureLab();
    tmp = tempDir('bootstrap-lab-ssh-');
  });

  afterAll(async () => {
    await Promise.all(opened.map((r) => r.close()));
    tmp?.remove();
  });

  it('connects to every host with strict host keys, runs as ops, reaches root through sudo -n, and passes the sudo check', async () => {
    for (const h of hosts()) {
      const remote = await connect(target(h.name));
      const r = await remote.exec('hostname; id -un');
      expect(r.stdout).toBe(`${h.name}\nops\n`);
      expect((await remote.exec('id -u; systemctl is-system-running || true', { sudo: true })).stdout).toMatch(/^0\n(running|degraded)\n$/);
      await expect(checkSudo(remote)).resolves.toBeUndefined();
      expect(
        (
          await remote.exec(
            'sudo -n tee /root/.bootstrap-lab-ssh-test >/dev/null && sudo -n cat /root/.bootstrap-lab-ssh-test && sudo -n rm /root/.bootstrap-lab-ssh-test',
            { stdin: 'through stdin\n' },
          )
        ).stdout,
      ).toBe('through stdin\n');
    }
  });

  it("tunnels to a port on the host's own loopback (reads its sshd banner through the tunnel)", async () => {
    const remote = await connect(target(hosts()[0].name));
    const stream = await remote.forward('127.0.0.1', 22);
    const banner = await new Promise<string>((res) => stream.once('data', (d: Buffer) => res(d.toString())));
    stream.destroy();
    expect(banner).toMatch(/^SSH-2\.0-OpenSSH_/);
  });

  it("reaches a host through another as jump host: the host sees the jump host's address", async () => {
    const [jump, behind] = hosts();
    const remote = await connect(target(behind.name, { bastion: `ops@${jump.address}:22` }));
    const from = (await remote.exec('echo $SSH_CLIENT')).stdout.split(' ')[0];
    expect(from).toBe(jump.address);
    const direct = await connect(target(behind.name));
    expect((await direct.exec('echo $SSH_CLIENT')).stdout.split(' ')[0]).toBe(NET.operator);
  });

  it("stops an unknown host with HOST_KEY_UNKNOWN; the fingerprint is the one the host's console shows", async () => {
    const h = hosts()[0];
    const err = await new SshTransport({ authSock: null }).connect(target(h.name, { knownHostsFile: join(tmp.dir, 'empty') })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect(err).toMatchObject({ causeId: 'HOST_KEY_UNKNOWN', host: h.name });
    const onConsole = (await hostExec(h.name, 'ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub')).stdout.split(' ')[1];
    expect((err as CauseError).evidence.excerpt).toBe(`ssh-ed25519 ${onConsole}`);
    expect((err as CauseError).evidence.command).toBe(`ssh-keyscan -p 22 -t ed25519 ${h.address} >> ${join(tmp.dir, 'empty')}`);
  });

  it('stops a host whose key changed with HOST_KEY_MISMATCH in under 5 s, not retried', async () => {
    const [a, b] = hosts();
    const lines = readFileSync(paths.knownHosts, 'utf8').split('\n');
    const bKey = lines
      .find((l) => l.startsWith(`${b.address} `))!
      .split(' ')
      .slice(1)
      .join(' ');
    const kh = join(tmp.dir, 'known_hosts_changed');
    writeFileSync(kh, `${a.address} ${bKey}\n`); // a's address with b's key: a reinstalled or impostor machine
    const started = Date.now();
    const err = await new SshTransport({ authSock: null, retries: 3 }).connect(target(a.name, { knownHostsFile: kh })).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toMatchObject({ causeId: 'HOST_KEY_MISMATCH', host: a.name, retryable: false });
    expect((err as CauseError).evidence.seen).toContain(`${kh} line 1`);
  });

  it('names a host whose SSH port refuses SSH_UNREACHABLE within a bounded time', async () => {
    const h = hosts()[hosts().length - 1];
    await fault(h.name, 'block-port', '22');
    try {
      const started = Date.now();
      const err = await new SshTransport({ authSock: null, retries: 2, retryMinTimeoutMs: 200 }).connect(target(h.name)).catch((e: unknown) => e);
      expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: h.name });
      expect((err as CauseError).evidence.seen).toMatch(/ECONNREFUSED.*\(3 attempts\)/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await fault(h.name, 'unblock-port', '22');
    }
    const remote = await connect(target(h.name));
    expect((await remote.exec('echo back')).stdout).toBe('back\n');
  });
});
