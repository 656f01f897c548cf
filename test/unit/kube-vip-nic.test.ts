import { describe, expect, it } from 'vitest';
import { chooseVipInterface, nicForVip } from '../../phases/kube-vip/nic.ts';
import { matchKubeVipLog } from '../../phases/kube-vip/log-causes.ts';

const ipAddr = (lines: string[]) => lines.map((l, i) => `${i + 1}: ${l} scope global\\       valid_lft forever preferred_lft forever`).join('\n');
const twoNics = ipAddr(['lo    inet 127.0.0.1/8', 'ens18    inet 10.0.5.3/24 brd 10.0.5.255', 'eth1@if7    inet 192.168.2.11/24 brd 192.168.2.255']);

describe('nicForVip', () => {
  it("names the NIC holding the server's address on the node network, not the first NIC", () => {
    expect(nicForVip(twoNics, '192.168.2.11', '192.168.2.0/24')).toBe('eth1');
  });

  it('falls back to the only NIC on the node network when the address is elsewhere', () => {
    expect(nicForVip(twoNics, '192.168.2.99', '192.168.2.0/24')).toBe('eth1');
  });

  it('finds nothing when no NIC is on the node network', () => {
    expect(nicForVip(twoNics, '192.168.2.11', '172.16.0.0/16')).toBeUndefined();
    expect(nicForVip('', '192.168.2.11', '192.168.2.0/24')).toBeUndefined();
  });
});

describe('choosing the one vip_interface of the DaemonSet', () => {
  it('takes the NIC all servers agree on', () => {
    const c = chooseVipInterface('auto', [
      { host: 'a', nic: 'eth0' },
      { host: 'b', nic: 'eth0' },
    ]);
    expect(c).toEqual({ interfaceName: 'eth0', stops: [] });
  });

  it('stops with VIP_INTERFACE_INVALID naming each NIC when servers differ', () => {
    const c = chooseVipInterface('auto', [
      { host: 'k3s-prod-1', nic: 'eth0' },
      { host: 'k3s-prod-2', nic: 'ens18' },
    ]);
    expect(c.interfaceName).toBeUndefined();
    expect(c.stops.map((s) => s.causeId)).toEqual(['VIP_INTERFACE_INVALID']);
    expect(c.stops[0].evidence.seen).toContain('k3s-prod-1: eth0, k3s-prod-2: ens18');
  });

  it('names the server without a NIC on the node network', () => {
    const c = chooseVipInterface('auto', [{ host: 'a', nic: 'eth0' }, { host: 'b' }]);
    expect(c.stops[0].causeId).toBe('VIP_INTERFACE_INVALID');
    expect(c.stops[0].host).toBe('b');
  });

  it('uses a named interface when every server has it, else NIC_NOT_FOUND per server', () => {
    expect(chooseVipInterface('bond0', [{ host: 'a', nic: 'eth0', links: ['lo', 'bond0'] }])).toEqual({ interfaceName: 'bond0', stops: [] });
    const c = chooseVipInterface('bond0', [
      { host: 'a', links: ['lo', 'bond0'] },
      { host: 'b', links: ['lo', 'eth0'] },
    ]);
    expect(c.stops.map((s) => [s.causeId, s.host])).toEqual([['NIC_NOT_FOUND', 'b']]);
  });
});

describe("naming a VIP failure from kube-vip's log", () => {
  const DEFAULT_IP = '10.43.0.1';
  const lease = 'error retrieving resource lock kube-system/plndr-cp-lock';
  it.each([
    [
      `E1130 ${lease}: Get "https://10.43.0.1:443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock": dial tcp 10.43.0.1:443: i/o timeout`,
      'KUBE_VIP_SERVICE_HOST_DEADLOCK',
    ],
    [
      `${lease}: leases.coordination.k8s.io "plndr-cp-lock" is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot get resource "leases"`,
      'KUBE_VIP_RBAC_MISSING',
    ],
    [
      'error initially creating leader election record: leases.coordination.k8s.io is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
      'KUBE_VIP_RBAC_MISSING',
    ],
    [
      'Failed to update lock: leases.coordination.k8s.io "plndr-cp-lock" is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot update resource "leases"',
      'KUBE_VIP_RBAC_MISSING',
    ],
    ['2025/10/01 12:00:00 ERROR checking interface err="eth9 is not valid interface, reason: get eth9 failed, error: Link not found"', 'VIP_INTERFACE_INVALID'],
    ['2025/10/01 12:00:00 ERROR detecting interface err="Unable to find default route"', 'VIP_INTERFACE_INVALID'],
    ['2026/01/20 12:00:00 ERROR detecting interface err="unable to find interface with default route: default route not found"', 'VIP_INTERFACE_INVALID'],
  ])('%s → %s', (line, id) => {
    expect(matchKubeVipLog(`2025/10/01 12:00:00 INFO kube-vip.io version=v0.9.2\n${line}\n`, DEFAULT_IP)).toEqual({ causeId: id, line });
  });

  it("the deadlock is the dial to THIS cluster's kubernetes ClusterIP, derived from its service network", () => {
    const line = `${lease}: Get "https://10.45.0.1:443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock?timeout=10s": dial tcp 10.45.0.1:443: i/o timeout`;
    expect(matchKubeVipLog(line, '10.45.0.1')).toEqual({ causeId: 'KUBE_VIP_SERVICE_HOST_DEADLOCK', line });
    // Another cluster's default address is not this one's deadlock (a timeout to some other host).
    expect(matchKubeVipLog(line.replaceAll('10.45.0.1', '10.43.0.1'), '10.45.0.1')).toBeUndefined();
    // The address is matched literally, not as a pattern ("." is no wildcard).
    expect(matchKubeVipLog(line.replaceAll('10.45.0.1', '10x45.0.1'), '10.45.0.1')).toBeUndefined();
  });

  it('names nothing for a healthy leader', () => {
    expect(matchKubeVipLog('2025/10/01 12:00:00 INFO Starting Kube-vip Manager with the ARP engine', DEFAULT_IP)).toBeUndefined();
  });
});
