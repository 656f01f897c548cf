// Derived values: written once in the inventory, computed everywhere else. The founder/VIP split is
// the one the operator's Ansible got wrong: servers JOIN the founder, Cilium and agents DIAL the VIP.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromText, parseBastion, resolveFrom, validateInventory } from '../../src/inventory/index.ts';

const home = '/home/op';
const prod = () => fromText(readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8'), '/repo/inventory/prod.yaml', home);

describe('derived endpoints', () => {
  it('servers join the founder; Cilium and agents dial the VIP', () => {
    const { derived } = prod();
    expect(derived.joinTarget).toBe('https://192.168.2.10:6443');
    expect(derived.apiEndpoint).toEqual({ host: '192.168.2.9', port: 6443 });
    expect(derived.apiUrl).toBe('https://192.168.2.9:6443');
  });

  it('the founder is the one marked, wherever it is listed; joiners keep inventory order', () => {
    const text = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8')
      .replace('address: 192.168.2.10, founder: true }', 'address: 192.168.2.10 }')
      .replace('{ name: k3s-prod-2, address: 192.168.2.11 }', '{ name: k3s-prod-2, address: 192.168.2.11, founder: true }');
    const { derived } = fromText(text, '/repo/inventory/prod.yaml', home);
    expect(derived.founder.name).toBe('k3s-prod-2');
    expect(derived.joiners.map((s) => s.name)).toEqual(['k3s-prod-1', 'k3s-prod-3']);
    expect(derived.joinTarget).toBe('https://192.168.2.11:6443');
  });

  it('the TLS SANs every server shares are the VIP and 127.0.0.1 (each server adds its own address: no server lists the others)', () => {
    expect(prod().derived.tlsSans).toEqual(['192.168.2.9', '127.0.0.1']);
  });

  it("the kubernetes ClusterIP and cluster DNS are k3s.serviceCidr's first and tenth addresses", () => {
    expect(prod().derived.serviceAddresses).toEqual({ kubernetes: '10.43.0.1', dns: '10.43.0.10' });
    const text = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8').replace(
      'version: v1.33.5+k3s1',
      'version: v1.33.5+k3s1\n  serviceCidr: 10.45.0.0/16',
    );
    expect(fromText(text, '/repo/inventory/prod.yaml', home).derived.serviceAddresses).toEqual({ kubernetes: '10.45.0.1', dns: '10.45.0.10' });
  });

  it('a service network without a tenth address is refused: k3s could not place cluster DNS', () => {
    const text = (cidr: string) =>
      readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8').replace(
        'version: v1.33.5+k3s1',
        `version: v1.33.5+k3s1\n  serviceCidr: ${cidr}`,
      );
    expect(validateInventory(text('10.45.0.0/29'), 'prod').violations).toEqual([
      {
        id: 'INVENTORY_SCHEMA',
        path: 'k3s.serviceCidr',
        message: "k3s.serviceCidr 10.45.0.0/29 is too small: k3s gives cluster DNS the network's address 10, so it must be a /28 or larger (line 10)",
      },
    ]);
    expect(fromText(text('10.45.0.0/28'), '/repo/inventory/prod.yaml', home).derived.serviceAddresses).toEqual({ kubernetes: '10.45.0.1', dns: '10.45.0.10' });
  });

  it('one server is not highly available; three are', () => {
    expect(prod().derived.highlyAvailable).toBe(true);
    const text = readFileSync(new URL('../fixtures/inventory/single-server.yaml', import.meta.url), 'utf8');
    const single = fromText(text, '/repo/inventory/single-server.yaml', home);
    expect(single.derived.highlyAvailable).toBe(false);
    expect(single.derived.joiners).toEqual([]);
    expect(single.derived.tlsSans).toEqual(['192.168.2.9', '127.0.0.1']);
    expect(single.warnings).toHaveLength(1);
  });
});

describe('derived paths', () => {
  it("resolve against the inventory file's folder, with ~ expanded; the HelmRelease against the GitOps checkout", () => {
    expect(prod().derived.paths).toEqual({
      inventoryDir: '/repo/inventory',
      imageArchives: [],
      k3sArtifacts: '/repo/artifacts/k3s',
      k3sBinary: '/repo/artifacts/k3s/k3s',
      sshKnownHostsFile: '/home/op/.ssh/known_hosts',
      sshIdentityFile: '/home/op/.ssh/id_ed25519',
      gitopsCheckout: '/repo/home-network',
      ciliumChart: '/repo/artifacts/cilium-1.19.5.tgz',
      ciliumHelmRelease: '/repo/home-network/platform/cilium/helmrelease.yaml',
      fluxInstall: '/repo/artifacts/flux-install.yaml',
      fluxDeployKeyFile: '/home/op/.config/bootstrap/prod-deploy-key',
      fluxKnownHostsFile: '/home/op/.config/bootstrap/prod-gitops-known-hosts',
    });
  });

  it('absolute paths stay as written; ~ alone is the home folder', () => {
    expect(resolveFrom('/repo/inventory', '/srv/k3s', home)).toBe('/srv/k3s');
    expect(resolveFrom('/repo/inventory', '~', home)).toBe('/home/op');
    expect(resolveFrom('/repo/inventory', 'k3s', home)).toBe('/repo/inventory/k3s');
    // NOTE: `~user/...` is not expanded (no lookup of other users); it is just a relative name.
    expect(resolveFrom('/repo/inventory', '~other/x', home)).toBe('/repo/inventory/~other/x');
  });
});

describe('derived bastion', () => {
  it('splits [user@]host[:port] and leaves out what was not written (an ssh config alias may supply it)', () => {
    expect(parseBastion('ops@192.168.2.1:2222')).toEqual({ user: 'ops', host: '192.168.2.1', port: 2222 });
    expect(parseBastion('jump.example')).toEqual({ host: 'jump.example' });
    expect(parseBastion('ops@jump')).toEqual({ user: 'ops', host: 'jump' });
  });

  it('dev goes through its bastion alias; prod has none', () => {
    const dev = fromText(readFileSync(new URL('../../inventory/dev.yaml', import.meta.url), 'utf8'), '/repo/inventory/dev.yaml', home);
    expect(dev.derived.bastion).toEqual({ host: 'dev-bastion' });
    expect(dev.derived.joinTarget).toBe('https://192.168.1.50:6443');
    expect(dev.derived.apiEndpoint).toEqual({ host: '192.168.1.49', port: 6443 });
    expect(prod().derived.bastion).toBeUndefined();
  });
});
