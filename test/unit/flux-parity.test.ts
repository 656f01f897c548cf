// Cilium parity across the hand-over: the differing keys as dotted paths, and the roll of the agents.
import { describe, expect, it } from 'vitest';
import { helmChartValues, rolled, valuesDiff } from '../../phases/flux/parity.ts';
import { handoverChanges, parityDrift, pick, type CiliumOwnership } from '../../phases/flux/handover.ts';

const own: CiliumOwnership = { helmChart: { name: 'cilium', namespace: 'kube-system' }, helmRelease: { name: 'cilium', namespace: 'kube-system' }, values: {} };

describe('valuesDiff', () => {
  it('equal values differ nowhere, whatever the key order', () => {
    expect(valuesDiff({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual([]);
  });
  it('names every differing leaf as a dotted path, added and removed keys too', () => {
    const bootstrap = { kubeProxyReplacement: true, updateStrategy: { rollingUpdate: { maxUnavailable: 1 } }, ipam: { operator: { clusterPoolIPv4PodCIDRList: ['10.42.0.0/16'] } }, gone: 'x' };
    const flux = { kubeProxyReplacement: true, updateStrategy: { rollingUpdate: { maxUnavailable: 2 } }, ipam: { operator: { clusterPoolIPv4PodCIDRList: ['10.0.0.0/8'] } }, added: { deep: 1 } };
    expect(valuesDiff(bootstrap, flux)).toEqual(['added', 'gone', 'ipam.operator.clusterPoolIPv4PodCIDRList[0]', 'updateStrategy.rollingUpdate.maxUnavailable']);
  });
  it('a type change is a difference ("6443" is not 6443); null is the same as absent (Helm drops it)', () => {
    expect(valuesDiff({ port: 6443 }, { port: '6443' })).toEqual(['port']);
    expect(valuesDiff({ a: null }, {})).toEqual([]);
  });
  it('a list of another length differs as a whole', () => {
    expect(valuesDiff({ l: [1] }, { l: [1, 2] })).toEqual(['l']);
  });
});

describe('helmChartValues / rolled / pick', () => {
  it('reads the HelmChart valuesContent YAML', () => {
    expect(helmChartValues({ spec: { valuesContent: 'a: 1\nb:\n  c: x\n' } })).toEqual({ a: 1, b: { c: 'x' } });
    expect(helmChartValues({ spec: {} })).toEqual({});
  });
  it('a changed generation is a roll; an unknown side is not', () => {
    expect(rolled({ generation: 1 }, { generation: 2 })).toBe(true);
    expect(rolled({ generation: 2 }, { generation: 2 })).toBe(false);
    expect(rolled(undefined, { generation: 2 })).toBe(false);
  });
  it('pick follows a dotted path', () => {
    expect(pick({ a: { b: [0, { c: 5 }] } }, 'a.b[1].c')).toBe(5);
  });
});

describe('parityDrift', () => {
  it('is nothing when values agree and the agents did not roll', () => {
    expect(parityDrift(own, { a: 1 }, 'the HelmChart', { a: 1 }, { before: 3, after: 3 })).toBeUndefined();
  });
  it('names the keys with both values', () => {
    const e = parityDrift(own, { bpf: { masquerade: true } }, "the bootstrap's HelmChart kube-system/cilium", { bpf: { masquerade: false } })!;
    expect(e.causeId).toBe('CILIUM_PARITY_DRIFT');
    expect(e.message).toBe("HelmRelease kube-system/cilium spec.values differ from the bootstrap's HelmChart kube-system/cilium at bpf.masquerade");
    expect(e.evidence.excerpt).toBe('bpf.masquerade: bootstrap true, Flux false');
  });
  it('a roll alone is a drift too', () => {
    const e = parityDrift(own, { a: 1 }, 'x', { a: 1 }, { before: 1, after: 2 })!;
    expect(e.message).toContain('the cilium DaemonSet rolled (generation 1 → 2)');
  });
});

describe('handoverChanges', () => {
  it('removes the manifest, marks the HelmChart unmanaged and deletes it, in that order', () => {
    const c = handoverChanges(own, { helmChart: true, manifest: true });
    expect(c.map((x) => (x.kind === 'command' ? x.command : ''))).toEqual([
      'rm -f /var/lib/rancher/k3s/server/manifests/cilium.yaml',
      'k3s kubectl annotate --overwrite -n kube-system helmchart.helm.cattle.io/cilium helmcharts.helm.cattle.io/unmanaged=true',
      'k3s kubectl delete -n kube-system helmchart.helm.cattle.io/cilium --wait=false',
    ]);
  });
  it('plans nothing once Flux owns Cilium', () => {
    expect(handoverChanges(own, { helmChart: false, manifest: false })).toEqual([]);
  });
});
