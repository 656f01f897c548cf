// ~/.ssh/config honoured against real sshd servers: a Host pattern gives User, Port, IdentityFile and
// ProxyJump; the jump host is an alias with its own HostName/Port/User. The config file is the test's
// own (never the operator's real ~/.ssh/config).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadSshConfig } from '../../src/transport/ssh-config.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import { resolveSshTarget, type TargetEnv } from '../../src/transport/target.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

describeAsRoot('~/.ssh/config against real sshd servers', () => {
  let tmp: ReturnType<typeof tempDir>;
  let jump: Sshd;
  let host: Sshd;
  let env: TargetEnv;
  let knownHosts: string;

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-config-');
    const key = makeKeypair(tmp.dir, 'lab_key');
    [jump, host] = await Promise.all(['127.0.0.31', '127.0.0.32'].map((address) => startSshd({ address, authorizedKeys: [key.publicKey] })));
    knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, jump.knownHostsLines() + host.knownHostsLines());
    const configFile = join(tmp.dir, 'ssh_config');
    writeFileSync(
      configFile,
      [
        'Host labjump',
        `  HostName ${jump.address}`,
        `  Port ${jump.port}`,
        `  User ${OPS_USER}`,
        'Host lab-* !lab-direct',
        `  ProxyJump labjump`,
        'Host lab-*',
        `  User ${OPS_USER}`,
        `  Port ${host.port}`,
        `  IdentityFile ${key.privateKeyPath}`,
        'Host *',
        '  User nobody-should-use-this',
        '',
      ].join('\n'),
    );
    env = { config: loadSshConfig(configFile, tmp.dir), home: tmp.dir, localUser: 'root' };
  });

  afterAll(async () => {
    await Promise.all([jump, host].map((s) => s?.stop()));
    tmp?.remove();
  });

  it('connects with the User, Port, IdentityFile and ProxyJump a Host pattern gives, through the jump host alias', async () => {
    const target = resolveSshTarget({ name: 'lab-1', address: host.address, knownHostsFile: knownHosts }, env);
    expect(target).toMatchObject({ user: OPS_USER, port: host.port, bastion: 'labjump' });
    const transport = new SshTransport({ sshConfig: env.config, home: tmp.dir, authSock: null });
    const remote = await transport.connect(target);
    try {
      const r = await remote.exec('id -un; echo $SSH_CLIENT');
      expect(r.stdout.split('\n')[0]).toBe(OPS_USER);
      expect(jump.connections()).toBe(1); // the alias reached the jump host's real address and port
      expect(host.connections()).toBe(1);
    } finally {
      await remote.close();
      await transport.close();
    }
  });

  it('honours a negated pattern: the excluded host is reached directly', async () => {
    const before = jump.connections();
    const target = resolveSshTarget({ name: 'lab-direct', address: host.address, knownHostsFile: knownHosts }, env);
    expect(target.bastion).toBeUndefined();
    const transport = new SshTransport({ sshConfig: env.config, home: tmp.dir, authSock: null });
    const remote = await transport.connect(target);
    expect((await remote.exec('echo direct')).stdout).toBe('direct\n');
    await remote.close();
    expect(jump.connections()).toBe(before);
  });

  it("lets the inventory's jump host win over ProxyJump, resolving its alias through ssh config", async () => {
    const target = resolveSshTarget({ name: 'lab-2', address: host.address, knownHostsFile: knownHosts, bastion: `${OPS_USER}@labjump` }, env);
    expect(target.bastion).toBe(`${OPS_USER}@labjump`);
    const transport = new SshTransport({ sshConfig: env.config, home: tmp.dir, authSock: null });
    const remote = await transport.connect(target);
    expect((await remote.exec('echo via-inventory')).stdout).toBe('via-inventory\n');
    await remote.close();
    await transport.close();
  });
});
