import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { matchPattern, matchPatternList } from '../../src/transport/patterns.ts';
import { expandPath, loadSshConfig, lookupHost, parseSshConfig, splitConfigLine, type SshConfig } from '../../src/transport/ssh-config.ts';
import { parseJumpSpec, resolveJumpHost, resolveSshTarget, type TargetEnv } from '../../src/transport/target.ts';

const config = (text: string): SshConfig => ({ blocks: parseSshConfig(text, 'config') });
const env = (text: string): TargetEnv => ({ config: config(text), home: '/home/op', localUser: 'op' });

describe('host patterns', () => {
  it('match * and ? over the whole name', () => {
    expect(matchPattern('k3s-prod-1', 'k3s-*')).toBe(true);
    expect(matchPattern('k3s-prod-1', 'k3s-prod-?')).toBe(true);
    expect(matchPattern('k3s-prod-12', 'k3s-prod-?')).toBe(false);
    expect(matchPattern('192.168.2.10', '192.168.*.1*')).toBe(true);
    expect(matchPattern('a', '*')).toBe(true);
    expect(matchPattern('abc', 'a*c*')).toBe(true);
    expect(matchPattern('abd', 'a*c')).toBe(false);
  });

  it('let one negated pattern veto the list', () => {
    expect(matchPatternList('a1', ['a*', '!a1'])).toBe(false);
    expect(matchPatternList('a2', ['a*', '!a1'])).toBe(true);
    expect(matchPatternList('b', ['a*', '!a1'])).toBeUndefined();
    expect(matchPatternList('x', '*,!y')).toBe(true);
  });
});

describe('ssh config parsing', () => {
  it('splits keywords and arguments: spaces, =, quotes, trailing comments', () => {
    expect(splitConfigLine('  HostName 10.0.0.1')).toEqual({ key: 'hostname', args: ['10.0.0.1'] });
    expect(splitConfigLine('Port=2222')).toEqual({ key: 'port', args: ['2222'] });
    expect(splitConfigLine('User = ops')).toEqual({ key: 'user', args: ['ops'] });
    expect(splitConfigLine('IdentityFile "~/my keys/id"')).toEqual({ key: 'identityfile', args: ['~/my keys/id'] });
    expect(splitConfigLine('Host a b # the lab')).toEqual({ key: 'host', args: ['a', 'b'] });
    expect(splitConfigLine('# comment')).toBeUndefined();
    expect(splitConfigLine('')).toBeUndefined();
  });

  it('takes the first value of each option, accumulates IdentityFile, and applies Host * last as a default', () => {
    const c = config(`
# defaults before any Host apply to all
User first
Host k3s-*
  Port 2222
  IdentityFile ~/.ssh/k3s
Host k3s-prod-1
  Port 2200
  HostName 192.168.2.10
Host *
  User late
  Port 22
  IdentityFile ~/.ssh/id_ed25519
`);
    expect(lookupHost(c, ['k3s-prod-1'])).toEqual({
      user: 'first',
      port: 2222,
      hostName: '192.168.2.10',
      identityFiles: ['~/.ssh/k3s', '~/.ssh/id_ed25519'],
    });
    expect(lookupHost(c, ['other'])).toMatchObject({ user: 'first', port: 22 });
  });

  it('matches a block on the inventory name or the address; a negated pattern on either excludes it', () => {
    const c = config(`
Host 192.168.2.* !192.168.2.1
  ProxyJump jump
Host k3s-prod-2
  User ops2
`);
    expect(lookupHost(c, ['k3s-prod-1', '192.168.2.10']).proxyJump).toBe('jump');
    expect(lookupHost(c, ['jumpbox', '192.168.2.1']).proxyJump).toBeUndefined();
    expect(lookupHost(c, ['k3s-prod-2', '10.0.0.2'])).toEqual({ user: 'ops2', identityFiles: [] });
  });

  it('ignores Match blocks other than Match all', () => {
    const c = config(`
Match exec "true"
  User never
Match all
  User always
`);
    expect(lookupHost(c, ['h']).user).toBe('always');
  });

  it('follows Include, inside a Host block only for that block', () => {
    const files: Record<string, string> = {
      'lab.conf': 'Host lab-*\n  User labuser\n',
      'ports.conf': 'Port 2022\n',
    };
    const read = (p: string) => (files[p] ? [{ file: p, text: files[p] }] : []);
    const blocks = parseSshConfig('Include lab.conf\nHost special\n  Include ports.conf\n  User sp\n', 'config', read);
    const c = { blocks };
    expect(lookupHost(c, ['lab-1'])).toEqual({ user: 'labuser', identityFiles: [] });
    expect(lookupHost(c, ['special'])).toMatchObject({ user: 'sp', port: 2022 });
  });

  it('reads a file and its Include globs relative to ~/.ssh; a missing file is an empty config', () => {
    const home = mkdtempSync(join(tmpdir(), 'bootstrap-sshconfig-'));
    try {
      mkdirSync(join(home, '.ssh', 'config.d'), { recursive: true });
      writeFileSync(join(home, '.ssh', 'config'), 'Include config.d/*.conf\nHost *\n  User fallback\n');
      writeFileSync(join(home, '.ssh', 'config.d', 'b.conf'), 'Host b\n  User bee\n');
      writeFileSync(join(home, '.ssh', 'config.d', 'a.conf'), 'Host b\n  User first-by-name\n');
      writeFileSync(join(home, '.ssh', 'config.d', 'ignored.txt'), 'Host b\n  User nope\n');
      const c = loadSshConfig(join(home, '.ssh', 'config'), home);
      expect(lookupHost(c, ['b']).user).toBe('first-by-name');
      expect(lookupHost(c, ['x']).user).toBe('fallback');
      expect(loadSshConfig(join(home, 'missing'), home).blocks).toEqual([]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('expands ~ and the tokens %h %p %r %u %n %d %%', () => {
    const t = { home: '/home/op', host: '10.0.0.1', port: 2222, user: 'ops', localUser: 'op', alias: 'node-1' };
    expect(expandPath('~/.ssh/id_%r@%h:%p', t)).toBe('/home/op/.ssh/id_ops@10.0.0.1:2222');
    expect(expandPath('%d/k/%n-%u-100%%', t)).toBe('/home/op/k/node-1-op-100%');
  });
});

describe('resolving a host: inventory first, then ~/.ssh/config, then defaults', () => {
  const sshConfig = `
Host k3s-*
  User cfguser
  Port 2222
  IdentityFile ~/.ssh/k3s_%r
  ProxyJump jump
Host jump
  HostName 192.168.2.1
  User jumpuser
  Port 2201
  IdentityFile ~/.ssh/jump_key
Host bare
  ProxyJump none
`;

  it('fills what the inventory leaves unset from ssh config', () => {
    expect(resolveSshTarget({ name: 'k3s-prod-1', address: '192.168.2.10' }, env(sshConfig))).toEqual({
      name: 'k3s-prod-1',
      address: '192.168.2.10',
      port: 2222,
      user: 'cfguser',
      identityFile: '/home/op/.ssh/k3s_cfguser',
      knownHostsFile: '/home/op/.ssh/known_hosts',
      bastion: 'jump',
    });
  });

  it('lets explicit inventory values win over ssh config, the address included', () => {
    const t = resolveSshTarget(
      {
        name: 'k3s-prod-1',
        address: '192.168.2.10',
        user: 'ops',
        port: 22,
        identityFile: '~/.ssh/id_ed25519',
        knownHostsFile: '~/kh',
        bastion: 'ops@10.0.0.1:22',
      },
      env(sshConfig + '\nHost k3s-prod-1\n  HostName 10.9.9.9\n'),
    );
    expect(t).toEqual({
      name: 'k3s-prod-1',
      address: '192.168.2.10',
      port: 22,
      user: 'ops',
      identityFile: '/home/op/.ssh/id_ed25519',
      knownHostsFile: '/home/op/kh',
      bastion: 'ops@10.0.0.1:22',
    });
  });

  it('falls back to ssh defaults: port 22, the local user, ~/.ssh/known_hosts, no jump host', () => {
    expect(resolveSshTarget({ name: 'bare', address: '10.0.0.5' }, env(sshConfig))).toEqual({
      name: 'bare',
      address: '10.0.0.5',
      port: 22,
      user: 'op',
      identityFile: undefined,
      knownHostsFile: '/home/op/.ssh/known_hosts',
      bastion: undefined,
    });
  });

  it('parses jump host specs: user@host:port, host, [v6]:port, ssh:// URLs', () => {
    expect(parseJumpSpec('ops@192.168.2.1:22')).toEqual({ user: 'ops', host: '192.168.2.1', port: 22 });
    expect(parseJumpSpec('jump')).toEqual({ user: undefined, host: 'jump', port: undefined });
    expect(parseJumpSpec('ops@[fd00::1]:2222')).toEqual({ user: 'ops', host: 'fd00::1', port: 2222 });
    expect(parseJumpSpec('ssh://a@b:3')).toEqual({ user: 'a', host: 'b', port: 3 });
    expect(() => parseJumpSpec('ops@host:99999')).toThrow(/jump host/);
  });

  it('resolves a jump host alias through ssh config (HostName, User, Port, IdentityFile)', () => {
    const e = env(sshConfig);
    const via = resolveSshTarget({ name: 'k3s-prod-1', address: '192.168.2.10' }, e);
    expect(resolveJumpHost(via.bastion!, via, e)).toEqual({
      name: 'jump',
      address: '192.168.2.1',
      port: 2201,
      user: 'jumpuser',
      identityFile: '/home/op/.ssh/jump_key',
      knownHostsFile: '/home/op/.ssh/known_hosts',
      bastion: undefined,
    });
  });

  it("lets the jump spec's own user and port win, and takes the rest from the host behind it", () => {
    const e = env('');
    const via = resolveSshTarget({ name: 'n', address: '10.0.0.5', user: 'ops', identityFile: '/k', bastion: '10.0.0.1:2200' }, e);
    expect(resolveJumpHost(via.bastion!, via, e)).toMatchObject({ address: '10.0.0.1', port: 2200, user: 'ops', identityFile: '/k' });
  });

  it('reads a chain a,b as: reach b through a', () => {
    const e = env(sshConfig);
    const via = resolveSshTarget({ name: 'n', address: '10.0.0.5', user: 'ops', bastion: 'first@10.0.0.1,jump' }, e);
    const last = resolveJumpHost(via.bastion!, via, e);
    expect(last).toMatchObject({ name: 'jump', address: '192.168.2.1', bastion: 'first@10.0.0.1' });
    expect(resolveJumpHost(last.bastion!, last, e)).toMatchObject({ address: '10.0.0.1', user: 'first', bastion: undefined });
  });
});
