// The twin's helm-controller against the engine's HelmChart and the real Cilium chart
// (../shared/testdata/cilium-1.19.5.tgz): what it renders and the release record it keeps.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderHelmChart } from '../../src/k3s/helmchart.ts';
import { configHash, renderChart } from '../../lab/twin/addons/helm/controller.ts';
import { decodeRelease, releaseSecret } from '../../lab/twin/addons/helm/release.ts';
import { coalesce } from '../../lab/twin/addons/helm/values.ts';

const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
const helmChart = (values: Record<string, unknown>) =>
  parse(renderHelmChart({ releaseName: 'cilium', namespace: 'kube-system', chartTgz: readFileSync(CHART), values, version: '1.19.5' }));
const agentEnv = (r: ReturnType<typeof renderChart>) => r.rendered.objects.find((o) => o.kind === 'DaemonSet').spec.template.spec.containers[0].env;
const names = (env: any[]) => env.map((e) => e.name);

describe("helm-controller twin: the Cilium chart's objects", () => {
  it('k8sServiceHost = VIP: the agent gets KUBERNETES_SERVICE_HOST/PORT, the DaemonSet the values updateStrategy', () => {
    const hc = helmChart({
      k8sServiceHost: '10.77.0.9',
      k8sServicePort: 6443,
      kubeProxyReplacement: true,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
    });
    const r = renderChart(hc.spec, 'cilium', 'kube-system');
    const ds = r.rendered.objects.find((o) => o.kind === 'DaemonSet');
    expect(ds.metadata).toMatchObject({ name: 'cilium', namespace: 'kube-system' });
    expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    expect(agentEnv(r)).toEqual(
      expect.arrayContaining([
        { name: 'KUBERNETES_SERVICE_HOST', value: '10.77.0.9' },
        { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
      ]),
    );
    expect(r.rendered.objects.find((o) => o.kind === 'ConfigMap').data['kube-proxy-replacement']).toBe('true');
    expect(r.rendered.objects.find((o) => o.kind === 'Deployment').metadata.name).toBe('cilium-operator');
  });

  it('k8sServiceHost "" (the chart default): no KUBERNETES_SERVICE_HOST at all, as the template emits none', () => {
    const r = renderChart(helmChart({ k8sServiceHost: '' }).spec, 'cilium', 'kube-system');
    expect(names(agentEnv(r))).not.toContain('KUBERNETES_SERVICE_HOST');
    expect(names(agentEnv(r))).not.toContain('KUBERNETES_SERVICE_PORT');
    // The chart's own default rollout width.
    expect(r.rendered.objects.find((o) => o.kind === 'DaemonSet').spec.updateStrategy.rollingUpdate.maxUnavailable).toBe(2);
  });

  it('the chart defaults come from its values.yaml; user maps merge key by key', () => {
    expect(coalesce({ a: { b: 1, c: 2 }, d: [1] }, { a: { c: 3 }, d: [2], e: null })).toEqual({ a: { b: 1, c: 3 }, d: [2] });
    const r = renderChart(helmChart({}).spec, 'cilium', 'kube-system');
    expect(r.meta).toMatchObject({ name: 'cilium', version: '1.19.5' });
    expect(r.rendered.objects.find((o) => o.kind === 'DaemonSet').spec.template.spec.containers[0].image).toMatch(
      /^quay\.io\/cilium\/cilium:v1\.19\.5@sha256:/,
    );
  });

  it('changed values change the config hash (a new release); the same values do not', () => {
    expect(configHash(helmChart({ k8sServiceHost: 'a' }).spec)).toBe(configHash(helmChart({ k8sServiceHost: 'a' }).spec));
    expect(configHash(helmChart({ k8sServiceHost: 'a' }).spec)).not.toBe(configHash(helmChart({ k8sServiceHost: 'b' }).spec));
  });

  it('the release Secret is what Helm stores: name, type, labels, and the values inside', () => {
    const s = releaseSecret({
      name: 'cilium',
      namespace: 'kube-system',
      version: 2,
      status: 'deployed',
      chartMetadata: { name: 'cilium' },
      chartValues: {},
      config: { k8sServiceHost: '10.77.0.9' },
      manifest: '---',
      firstDeployed: '2026-01-01T00:00:00Z',
      description: 'Upgrade complete',
    });
    expect(s.metadata.name).toBe('sh.helm.release.v1.cilium.v2');
    expect(s.type).toBe('helm.sh/release.v1');
    expect(s.metadata.labels).toMatchObject({ name: 'cilium', owner: 'helm', status: 'deployed', version: '2' });
    expect(decodeRelease(s.data.release)).toMatchObject({
      name: 'cilium',
      version: 2,
      namespace: 'kube-system',
      config: { k8sServiceHost: '10.77.0.9' },
      info: { status: 'deployed' },
    });
  });

  it('a chart other than cilium is refused by name', () => {
    expect(() => renderChart({ chartContent: Buffer.from('not a tgz').toString('base64') }, 'x', 'y')).toThrow();
  });
});
