// verify's node-to-node health: Cilium's own health report (cilium-health status -o json,
// HealthStatusResponse) reduced to the pairs that cannot reach each other, the ports to open, and the nodes
// it has no result for yet.
import { describe, expect, it } from 'vitest';
import { failureConfirmed, nodeHealth } from '../../phases/verify/node-health.ts';

const node = (name: string, ip: string, http: Record<string, unknown>, endpoint?: Record<string, unknown>) => ({
  name,
  host: { 'primary-address': { ip, http }, 'secondary-addresses': [] },
  ...(endpoint ? { 'health-endpoint': { 'primary-address': { ip: '10.42.1.7', http: endpoint } } } : {}),
});

describe("Cilium's node-to-node health", () => {
  it('every peer greeted (status empty, a latency): all reached, the local node left out', () => {
    const doc = {
      local: { name: 'k3s-prod-1' },
      nodes: [node('k3s-prod-1', '192.168.2.10', { latency: 1 }), node('k3s-prod-2', '192.168.2.11', { latency: 234567 })],
      timestamp: '2026-12-01T00:00:00Z',
    };
    expect(nodeHealth(JSON.stringify(doc))).toEqual({
      local: 'k3s-prod-1',
      reached: ['k3s-prod-2'],
      unreachable: [],
      unprobed: [],
      timestamp: '2026-12-01T00:00:00Z',
    });
  });

  it('a peer whose health port refuses: the pair, its address, the prober error and 4240/tcp', () => {
    const status = 'Get "http://192.168.2.11:4240/hello": dial tcp 192.168.2.11:4240: connect: connection refused';
    const doc = { local: { name: 'k3s-prod-1' }, nodes: [node('k3s-prod-2', '192.168.2.11', { status }), node('k3s-prod-3', '192.168.2.12', { latency: 5 })] };
    expect(nodeHealth(JSON.stringify(doc))).toEqual({
      local: 'k3s-prod-1',
      reached: ['k3s-prod-3'],
      unreachable: [{ from: 'k3s-prod-1', to: 'k3s-prod-2', ip: '192.168.2.11', path: 'host', ports: ['4240/tcp'], status }],
      unprobed: [],
    });
  });

  it('a report before its first publication (nodes null), a node listed before its first probe, a node not listed: no result yet, none of them reached', () => {
    expect(
      nodeHealth(JSON.stringify({ local: { name: '' }, nodes: null, timestamp: '2026-12-07T19:00:00Z', probeInterval: '0s' }), {
        self: 'a',
        expected: ['b', 'c'],
      }),
    ).toEqual({
      local: 'a',
      reached: [],
      unreachable: [],
      unprobed: ['b', 'c'],
      timestamp: '2026-12-07T19:00:00Z',
      probeInterval: '0s',
    });
    const doc = {
      local: { name: 'a' },
      nodes: [
        { name: 'b', host: { 'primary-address': { ip: '192.168.2.11' }, 'secondary-addresses': [] } },
        node('d', '192.168.2.13', { latency: 3, lastProbed: '2026-12-07T19:01:00Z' }),
      ],
      probeInterval: '1m57.5s',
    };
    expect(nodeHealth(JSON.stringify(doc), { self: 'a', expected: ['b', 'c', 'd'] })).toMatchObject({
      reached: ['d'],
      unprobed: ['b', 'c'],
      probeInterval: '1m57.5s',
    });
  });

  it('a failure is settled only by a probe made after the check first saw it failing (clocks 3 s apart at most), or when the report gives no probe time', () => {
    const u = { from: 'a', to: 'b', ip: '192.168.2.11', path: 'host' as const, ports: ['4240/tcp'], status: 'refused' };
    const seen = Date.parse('2026-12-07T19:01:10Z');
    expect(failureConfirmed({ ...u, lastProbed: '2026-12-07T19:01:00Z' }, undefined)).toBe(false);
    // Made before the check looked, published since (Cilium publishes up to a round late): not yet.
    expect(failureConfirmed({ ...u, lastProbed: '2026-12-07T19:01:05Z' }, seen)).toBe(false);
    expect(failureConfirmed({ ...u, lastProbed: '2026-12-07T19:01:13Z' }, seen)).toBe(false);
    expect(failureConfirmed({ ...u, lastProbed: '2026-12-07T19:01:14Z' }, seen)).toBe(true);
    expect(failureConfirmed(u, undefined)).toBe(true);
  });

  it('the host answers but its health endpoint in the pod network does not: the tunnel, 8472/udp', () => {
    const doc = { local: { name: 'a' }, nodes: [node('b', '192.168.2.11', { latency: 5 }, { status: 'Connection timed out' })] };
    expect(nodeHealth(JSON.stringify(doc))?.unreachable).toEqual([
      { from: 'a', to: 'b', ip: '10.42.1.7', path: 'health-endpoint', ports: ['8472/udp', '4240/tcp'], status: 'Connection timed out' },
    ]);
  });

  it('not a health report: undefined', () => {
    expect(nodeHealth('Cannot get status/probe: ...')).toBeUndefined();
    expect(nodeHealth('{"cilium":{"state":"Ok"}}')).toBeUndefined();
  });
});
