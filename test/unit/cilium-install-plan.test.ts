import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fromText } from '../../src/inventory/load.ts';
import { checkAdoptable, ciliumInstallPlan } from '../../phases/cilium/install-plan.ts';
import { ciliumValuesFor } from '../../src/gitops/values-source.ts';

const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
const fixture = fileURLToPath(new URL('../fixtures/gitops', import.meta.url));
const prodText = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8').replace('checkout: ../home-network', `checkout: ${fixture}`);
const inventory = (text: string) => fromText(text, '/x/inventory/prod.yaml', '/home/ops');

describe('the Cilium install plan for prod, from the GitOps fixture and the real chart', () => {
  const tgz = () => readFileSync(CHART);
  // Rendering the real chart costs a second or two of CPU; more beside two labs on a CI machine.
  const CHART_RENDER_MS = 30_000;

  it(
    'passes every gate and renders the HelmChart with the substituted values',
    async () => {
      const inv = inventory(prodText);
      const source = await ciliumValuesFor(inv);
      const plan = ciliumInstallPlan(inv, source, tgz(), 'cilium-1.19.5.tgz');
      expect(plan.stops).toEqual([]);
      const doc = parse(plan.manifest!);
      expect(doc.metadata.name).toBe('cilium');
      expect(doc.spec.targetNamespace).toBe('kube-system');
      expect(parse(doc.spec.valuesContent).k8sServiceHost).toBe('192.168.2.9');
    },
    CHART_RENDER_MS,
  );

  it(
    'stops before installing when the inventory disagrees with the values',
    async () => {
      const inv = inventory(
        prodText.replace('vip: 192.168.2.9 ', 'vip: 192.168.2.8 ').replace('version: v1.33.5+k3s1', 'version: v1.33.5+k3s1\n  clusterCidr: 10.52.0.0/16'),
      );
      const source = await ciliumValuesFor(inv);
      const plan = ciliumInstallPlan(inv, source, tgz(), 'cilium-1.19.5.tgz');
      expect(plan.manifest).toBeUndefined();
      expect(plan.stops.map((s) => s.causeId)).toEqual(['SERVICE_HOST_NOT_VIP', 'POD_CIDR_MISMATCH']);
    },
    CHART_RENDER_MS,
  );

  it('refuses a HelmRelease whose release storage Flux would look for elsewhere', async () => {
    const source = await ciliumValuesFor(inventory(prodText));
    expect(checkAdoptable(source)).toEqual([]);
    const [s] = checkAdoptable({ ...source, namespace: 'cilium', releaseName: 'cilium-cilium' });
    expect(s.causeId).toBe('GITOPS_SOURCE_INVALID');
    expect(s.evidence.seen).toContain('keeps its release in kube-system (storageNamespace) but installs into cilium');
  });
});
