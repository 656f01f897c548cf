// Cilium parity across the hand-over: the differing keys as dotted paths, and the roll of the agents.
import { describe, expect, it } from 'vitest';
import { helmChartValues, rolled, valuesDiff } from '../../phases/flux/parity.ts';
import { handoverChanges, parityDrift, pick, readAbsent, templateGenerationOf, type CiliumOwnership } from '../../phases/flux/handover.ts';
import { helmChartObject, REMOVE_FINALIZER, UNMANAGED, type HelmChartObject } from '../../src/k3s/helmchart-object.ts';

const own: CiliumOwnership = { helmChart: { name: 'cilium', namespace: 'kube-system' }, helmRelease: { name: 'cilium', namespace: 'kube-system' }, values: {} };

describe('valuesDiff', () => {
  it('equal values differ nowhere, whatever the key order', () => {
    expect(valuesDiff({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual([]);
  });
  it('names every differing leaf as a dotted path, added and removed keys too', () => {
    const bootstrap = {
      kubeProxyReplacement: true,
      updateStrategy: { rollingUpdate: { maxUnavailable: 1 } },
      ipam: { operator: { clusterPoolIPv4PodCIDRList: ['10.42.0.0/16'] } },
      gone: 'x',
    };
    const flux = {
      kubeProxyReplacement: true,
      updateStrategy: { rollingUpdate: { maxUnavailable: 2 } },
      ipam: { operator: { clusterPoolIPv4PodCIDRList: ['10.0.0.0/8'] } },
      added: { deep: 1 },
    };
    expect(valuesDiff(bootstrap, flux)).toEqual([
      'added',
      'gone',
      'ipam.operator.clusterPoolIPv4PodCIDRList[0]',
      'updateStrategy.rollingUpdate.maxUnavailable',
    ]);
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
  it('a changed template generation is a roll; an unknown side is not', () => {
    expect(rolled({ templateGeneration: 1 }, { templateGeneration: 2 })).toBe(true);
    expect(rolled({ templateGeneration: 2 }, { templateGeneration: 2 })).toBe(false);
    expect(rolled(undefined, { templateGeneration: 2 })).toBe(false);
  });
  it("the roll check reads the DaemonSet's template generation, not metadata.generation (a new rollout width is no roll)", () => {
    const ds = JSON.stringify({ metadata: { generation: 3, annotations: { 'deprecated.daemonset.template.generation': '1' } } });
    expect(templateGenerationOf(ds, 0)).toBe(1);
    expect(templateGenerationOf('', 1)).toBeUndefined();
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
    expect(e.message).toContain('the cilium DaemonSet rolled (template generation 1 → 2)');
  });
});

describe('handoverChanges', () => {
  // The chart's writes are actions through the Kubernetes API (the request first, kubectl's arguments where it falls back).
  const commands = (c: ReturnType<typeof handoverChanges>) =>
    c.map((x) => (x.kind === 'command' ? x.command : x.kind === 'action' ? x.runs[0].split('   (')[0] : ''));
  const chart = (o: Partial<HelmChartObject> = {}): HelmChartObject => ({ unmanaged: false, finalizers: [REMOVE_FINALIZER], deleting: false, ...o });
  const HC = '/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/cilium';
  it('removes the manifest, marks the HelmChart unmanaged, takes the finalizer off, deletes it and waits, in that order', () => {
    const changes = handoverChanges(own, { helmChart: chart(), manifest: true }, 'k3s-prod-1');
    expect(commands(changes)).toEqual([
      'rm -f /var/lib/rancher/k3s/server/manifests/cilium.yaml',
      `PATCH ${HC} {"metadata":{"annotations":{"helmcharts.helm.cattle.io/unmanaged":"true"}}}`,
      `PATCH ${HC} [{"op":"test","path":"/metadata/finalizers/0","value":"wrangler.cattle.io/on-helm-chart-remove"},{"op":"remove","path":"/metadata/finalizers/0"}]`,
      `DELETE ${HC}`,
    ]);
    // Where it goes, and what runs on the host without a kubeconfig in the state folder.
    const shown = changes.flatMap((c) => (c.kind === 'action' ? c.runs : []));
    expect(shown[0]).toContain(
      "through the SSH connection to k3s-prod-1; without the state folder's kubeconfig: sudo k3s kubectl annotate --overwrite -n kube-system helmchart.helm.cattle.io/cilium helmcharts.helm.cattle.io/unmanaged=true there",
    );
    expect(shown.at(-1)).toMatch(
      /^every 1 s, at most 60 s, until it is not found: GET \/apis\/helm\.cattle\.io\/v1\/namespaces\/kube-system\/helmcharts\/cilium /,
    );
  });
  it('a chart left Terminating by an earlier hand-over (unmanaged, finalizer on): only the finalizer and the wait', () => {
    expect(
      commands(
        handoverChanges(
          own,
          { helmChart: chart({ unmanaged: true, deleting: true, finalizers: ['other/x', REMOVE_FINALIZER] }), manifest: false },
          'k3s-prod-1',
        ),
      ),
    ).toEqual([
      `PATCH ${HC} [{"op":"test","path":"/metadata/finalizers/1","value":"wrangler.cattle.io/on-helm-chart-remove"},{"op":"remove","path":"/metadata/finalizers/1"}]`,
      `DELETE ${HC}`,
    ]);
  });
  it('a chart helm-controller never claimed (no finalizer): annotate, delete, wait', () => {
    expect(commands(handoverChanges(own, { helmChart: chart({ finalizers: [] }), manifest: false }, 'k3s-prod-1'))).toHaveLength(2);
  });
  it('plans nothing once the HelmChart and its manifest are gone', () => {
    expect(handoverChanges(own, { helmChart: undefined, manifest: false }, 'k3s-prod-1')).toEqual([]);
    // The gate then knows the chart is gone without reading it again; a read that failed or found it says nothing.
    expect(readAbsent({ code: 1, stdout: '', stderr: 'Error from server (NotFound): helmcharts.helm.cattle.io "cilium" not found' })).toBe(true);
    // No answer from the API, no k3s on the host, another refusal: nothing said about the chart.
    expect(
      readAbsent({ code: 1, stdout: '', stderr: 'The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?' }),
    ).toBe(false);
    expect(readAbsent({ code: 127, stdout: '', stderr: 'sh: 1: k3s: not found' })).toBe(false);
    expect(readAbsent({ code: 1, stdout: '', stderr: 'Error from server (Forbidden): helmcharts.helm.cattle.io "cilium" is forbidden' })).toBe(false);
    expect(readAbsent({ code: 0, stdout: '{"kind":"HelmChart"}', stderr: '' })).toBe(false);
  });
  it('reads the probe: gone when empty, the annotation, the finalizers and the deletion mark', () => {
    expect(helmChartObject({ stdout: '', stderr: '', code: 0 })).toBeUndefined();
    const seen = { metadata: { annotations: { [UNMANAGED]: 'true' }, finalizers: [REMOVE_FINALIZER], deletionTimestamp: '2026-12-01T00:00:00Z' } };
    expect(helmChartObject({ stdout: JSON.stringify(seen), stderr: '', code: 0 })).toEqual({ unmanaged: true, finalizers: [REMOVE_FINALIZER], deleting: true });
  });
});
