import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { list, loadSettings, mergeConfigDocs, parseFlags, str } from '../../lab/twin/config.ts';
import { criticalArgs, mismatched } from '../../lab/twin/server/critical.ts';
import { clusterDnsIP, kubernetesServiceIP, serviceRange } from '../../lab/twin/service-network.ts';

describe('k3s twin configuration (k3s config file rules)', () => {
  it('later files replace keys and a key ending in + appends', () => {
    const merged = mergeConfigDocs([
      { 'tls-san': ['10.0.0.10'], 'node-ip': '10.0.0.1', disable: ['traefik'] },
      { 'tls-san+': ['10.0.0.20'], 'node-ip': '10.0.0.2', 'disable+': 'servicelb' },
    ]);
    expect(merged['tls-san']).toEqual(['10.0.0.10', '10.0.0.20']);
    expect(merged['node-ip']).toBe('10.0.0.2');
    expect(merged.disable).toEqual(['traefik', 'servicelb']);
  });

  it('reads config.yaml then config.yaml.d alphabetically, and flags win', () => {
    const dir = mkdtempSync(join(tmpdir(), 'twin-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'token: from-file\ntls-san: [a]\ncluster-init: true\n');
    mkdirSync(`${file}.d`);
    writeFileSync(join(`${file}.d`, '20-b.yaml'), 'tls-san+: [c]\n');
    writeFileSync(join(`${file}.d`, '10-a.yaml'), 'tls-san+: [b]\nnode-name: n1\n');
    const { flags } = parseFlags(['--config', file, '--node-name=n2', '-t', 'from-flag']);
    const s = loadSettings(flags, {});
    expect(list(s, 'tls-san')).toEqual(['a', 'b', 'c']);
    expect(str(s, 'node-name')).toBe('n2');
    expect(str(s, 'token')).toBe('from-flag');
    expect(s['cluster-init']).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads drop-ins named *.yml in any case, skips folders and other files; K3S_* variables only where no file sets the key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'twin-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'token: from-file\n');
    mkdirSync(`${file}.d`);
    writeFileSync(join(`${file}.d`, '10-a.YML'), 'node-ip: 10.0.0.7\n');
    writeFileSync(join(`${file}.d`, '20-notes.txt'), 'node-ip: 10.0.0.8\n');
    mkdirSync(join(`${file}.d`, '30-old.yaml'));
    const s = loadSettings(parseFlags(['--config', file]).flags, { K3S_TOKEN: 'from-env', K3S_URL: 'https://10.0.0.9:6443' });
    expect(str(s, 'node-ip')).toBe('10.0.0.7');
    expect(str(s, 'token')).toBe('from-file');
    expect(str(s, 'server')).toBe('https://10.0.0.9:6443');
    rmSync(dir, { recursive: true, force: true });
  });

  it('parses bare boolean flags and repeated list flags', () => {
    const { flags, positional } = parseFlags(['save', '--cluster-init', '--tls-san', 'x', '--tls-san=y,z', '--server', 'https://a:6443']);
    expect(positional).toEqual(['save']);
    expect(flags['cluster-init']).toBe(true);
    expect(flags['tls-san']).toEqual(['x', 'y', 'z']);
    expect(flags.server).toBe('https://a:6443');
  });

  it('names each critical argument that differs between servers', () => {
    const founder = criticalArgs({ 'flannel-backend': 'none', 'disable-network-policy': true, disable: ['servicelb'] });
    const joiner = criticalArgs({ 'flannel-backend': 'none', disable: [] });
    expect(mismatched(joiner, founder)).toEqual(['disable-network-policy', 'disable-service-lb']);
    // CIDR and DNS differences are named by their go-test/deep field path, in struct order (k3s compareConfig).
    expect(mismatched(criticalArgs({ 'cluster-cidr': '10.52.0.0/16' }), criticalArgs({}))).toEqual(['ClusterIPRanges.slice[0].IP', 'ClusterIPRange.IP']);
    expect(mismatched(criticalArgs({ 'service-cidr': '10.43.0.0/17' }), criticalArgs({}))).toEqual([
      'ServiceIPRange.Mask.slice[2]',
      'ServiceIPRanges.slice[0].Mask.slice[2]',
    ]);
    expect(mismatched(criticalArgs({ 'cluster-dns': '10.43.0.11' }), criticalArgs({}))).toEqual(['ClusterDNSs.slice[0]', 'cluster-dns']);
    expect(mismatched(founder, founder)).toEqual([]);
    expect(criticalArgs({})['cluster-cidr']).toBe('10.42.0.0/16');
  });

  it("unset, cluster DNS is the service range's tenth address, so another service-cidr differs in ClusterDNS first", () => {
    expect(criticalArgs({})['cluster-dns']).toBe('10.43.0.10');
    expect(criticalArgs({ 'service-cidr': '10.45.0.0/16' })['cluster-dns']).toBe('10.45.0.10');
    expect(criticalArgs({ 'service-cidr': '10.45.0.0/16', 'cluster-dns': '10.45.0.53' })['cluster-dns']).toBe('10.45.0.53');
    expect(mismatched(criticalArgs({ 'service-cidr': '10.45.0.0/16' }), criticalArgs({}))).toEqual([
      'ClusterDNSs.slice[0]',
      'cluster-dns',
      'ServiceIPRange.IP',
      'ServiceIPRanges.slice[0].IP',
    ]);
  });
});

describe('the service range as k3s reads it', () => {
  it('its first entry (a comma list is dual-stack), default 10.43.0.0/16; the kubernetes ClusterIP is address 1, cluster DNS address 10', () => {
    expect(serviceRange(undefined)).toBe('10.43.0.0/16');
    expect(serviceRange('10.45.0.0/16,fd00:45::/112')).toBe('10.45.0.0/16');
    expect(kubernetesServiceIP('10.45.0.0/16')).toBe('10.45.0.1');
    expect(clusterDnsIP('10.45.0.0/16')).toBe('10.45.0.10');
    expect(kubernetesServiceIP('10.45.7.3/24')).toBe('10.45.7.1');
  });

  it("a range with no tenth address stops k3s with GetIndexedIP's words", () => {
    expect(() => clusterDnsIP('10.45.0.0/29')).toThrow(
      'cannot configure default cluster-dns address: can\'t generate IP with index 10 from subnet. subnet too small. subnet: "10.45.0.0/29"',
    );
    expect(() => kubernetesServiceIP('fd00:45::/112')).toThrow(/invalid service-cidr fd00:45::\/112/);
  });
});
