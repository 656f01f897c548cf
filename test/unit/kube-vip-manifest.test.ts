import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fromText } from '../../src/inventory/load.ts';
import { kubeVipManifest, type ServerNicProbe } from '../../phases/kube-vip/manifest.ts';

const text = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
const prod = fromText(text, '/x/inventory/prod.yaml', '/home/ops');
const named = fromText(text.replace('interface: auto', 'interface: bond0'), '/x/inventory/prod.yaml', '/home/ops');

const probe = (name: string, address: string, nic: string): ServerNicProbe => ({
  name,
  address,
  addrs: `1: lo    inet 127.0.0.1/8 scope host lo\n2: ${nic}    inet ${address}/24 brd 192.168.2.255 scope global ${nic}`,
  links: `1: lo: <LOOPBACK,UP> mtu 65536\n2: ${nic}: <BROADCAST,UP> mtu 1500`,
});
const servers = (nics: string[]) => prod.derived.servers.map((s, i) => probe(s.name, s.address, nics[i]));

describe('the kube-vip manifest from the servers’ probes', () => {
  it('renders the VIP on the NIC the servers share', () => {
    const m = kubeVipManifest(prod, servers(['eth0', 'eth0', 'eth0']));
    expect(m.stops).toEqual([]);
    expect(m.interfaceName).toBe('eth0');
    const ds = parseAllDocuments(m.content!)
      .map((d) => d.toJS())
      .find((d) => d.kind === 'DaemonSet');
    const env = Object.fromEntries(ds.spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env).toMatchObject({ address: '192.168.2.9', port: '6443', vip_interface: 'eth0' });
  });

  it('stops with VIP_INTERFACE_INVALID when one server names its NIC differently', () => {
    const m = kubeVipManifest(prod, servers(['eth0', 'eth0', 'ens18']));
    expect(m.content).toBeUndefined();
    expect(m.stops.map((s) => s.causeId)).toEqual(['VIP_INTERFACE_INVALID']);
    expect(m.stops[0].evidence.seen).toContain('k3s-prod-3: ens18');
  });

  it('a named controlPlane.interface must exist on every server', () => {
    const m = kubeVipManifest(named, servers(['eth0', 'eth0', 'eth0']));
    expect(m.stops.map((s) => [s.causeId, s.host])).toEqual([
      ['NIC_NOT_FOUND', 'k3s-prod-1'],
      ['NIC_NOT_FOUND', 'k3s-prod-2'],
      ['NIC_NOT_FOUND', 'k3s-prod-3'],
    ]);
    expect(kubeVipManifest(named, servers(['bond0', 'bond0', 'bond0'])).interfaceName).toBe('bond0');
  });
});
