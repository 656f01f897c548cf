import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { causesOf } from '../../src/errors.ts';
import { effectiveClusterVars } from '../../src/gitops/cluster-vars.ts';
import { checkoutReader, ciliumValues } from '../../src/gitops/values-source.ts';

const checkout = fileURLToPath(new URL('../fixtures/gitops/', import.meta.url));
const read = checkoutReader(checkout);
const HR = 'platform/cilium/helmrelease.yaml';
const values = (clusterPath: string) => ciliumValues({ checkout, helmReleasePath: HR, clusterPath });

async function stopOf(p: Promise<unknown>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  const causes = causesOf(err);
  expect(causes.length, String(err)).toBeGreaterThan(0);
  return causes;
}

describe("an environment's effective cluster-vars", () => {
  it('lab: the base plus an inline strategic-merge patch (null deletes a key)', async () => {
    const cv = await effectiveClusterVars(read, { clusterPath: 'clusters/lab' });
    expect(cv.vars).toEqual({
      CLUSTER_ENV: 'lab',
      K3S_API_HOST: '10.77.0.9',
      CILIUM_LB_POOL_START: '10.77.0.60',
      CILIUM_LB_POOL_STOP: '10.77.0.70',
      GATEWAY_VIP: '10.77.0.60',
      CILIUM_CGROUP_HOST_ROOT: '/sys/fs/cgroup/unified',
      CILIUM_PROBE_FREQUENCY_RATIO: '0',
    });
    expect(cv.origins.K3S_API_HOST).toBe('clusters/lab/kustomization.yaml (inline patch)');
    expect(cv.files).toEqual([
      'clusters/lab/kustomization.yaml',
      'clusters/base/kustomization.yaml',
      'clusters/base/cluster-vars.yaml',
      'clusters/base/platform.yaml',
    ]);
  });

  it('prod: JSON 6902 from a file — replace, add and remove', async () => {
    const cv = await effectiveClusterVars(read, { clusterPath: 'clusters/prod' });
    expect(cv.vars).toEqual({
      CLUSTER_ENV: 'prod',
      K3S_API_HOST: '192.168.2.9',
      CILIUM_LB_POOL_START: '192.168.2.20',
      CILIUM_LB_POOL_STOP: '192.168.2.30',
      GATEWAY_VIP: '192.168.2.20',
      UNIFI_L4_VIP: '192.168.2.21',
    });
    expect(cv.origins.K3S_API_HOST).toBe('clusters/prod/cluster-vars-patch.yaml');
    expect(cv.files).toContain('clusters/prod/cluster-vars-patch.yaml');
  });

  it('dev: a strategic-merge patch from a file, then inline JSON 6902; untouched keys keep the base', async () => {
    const cv = await effectiveClusterVars(read, { clusterPath: 'clusters/dev' });
    expect(cv.vars).toMatchObject({
      CLUSTER_ENV: 'dev',
      K3S_API_HOST: '192.168.1.49',
      CILIUM_LB_POOL_START: '192.168.1.61',
      GATEWAY_VIP: '192.168.1.61',
      CRAFTY_L4_VIP: '192.168.1.62',
      CILIUM_LB_POOL_STOP: '192.168.1.70',
    });
    expect(cv.origins).toMatchObject({
      CLUSTER_ENV: 'clusters/dev/cluster-vars.yaml',
      CILIUM_LB_POOL_STOP: 'clusters/base/cluster-vars.yaml',
      GATEWAY_VIP: 'clusters/dev/kustomization.yaml (inline patch)',
    });
  });

  it('a JSON 6902 remove of a key that does not exist stops with GITOPS_SOURCE_INVALID naming the patch', async () => {
    const [c] = await stopOf(effectiveClusterVars(read, { clusterPath: 'broken/patch-does-not-apply' }));
    expect(c.causeId).toBe('GITOPS_SOURCE_INVALID');
    expect(c.message).toContain('broken/patch-does-not-apply/kustomization.yaml (inline patch)');
    expect(c.message).toContain('/data/K3S_API_HOSTS');
  });

  it('a strategic-merge patch without a namespace misses flux-system/cluster-vars, as in kustomize', async () => {
    const [c] = await stopOf(effectiveClusterVars(read, { clusterPath: 'broken/patch-without-namespace' }));
    expect(c.causeId).toBe('GITOPS_SOURCE_INVALID');
    expect(c.evidence.seen).toContain('matches 0 resources');
  });

  it('behaves as kustomize where a JSON 6902 replace meets a missing key (it adds it), and patches before setting the namespace', async () => {
    const files: Record<string, string> = {
      'env/kustomization.yaml': [
        'namespace: flux-system',
        'resources: [vars.yaml]',
        'patches:',
        '  - target: { kind: ConfigMap, name: cluster-vars }',
        '    patch: |-',
        '      - {op: replace, path: /data/NEW, value: x}',
        '  - patch: "{apiVersion: v1, kind: ConfigMap, metadata: {name: cluster-vars}, data: {A: patched}}"',
      ].join('\n'),
      'env/vars.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cluster-vars }\ndata: { A: "1" }\n',
    };
    const mem = async (p: string) => {
      if (!(p in files)) throw new Error(`ENOENT ${p}`);
      return files[p];
    };
    const cv = await effectiveClusterVars(mem, { clusterPath: 'env' });
    expect(cv.vars).toEqual({ A: 'patched', NEW: 'x' });
    // A patch text starting with `[` must be JSON for kustomize ("unable to parse SM or JSON patch").
    files['env/kustomization.yaml'] = 'resources: [vars.yaml]\npatches:\n  - target: { kind: ConfigMap }\n    patch: "[{op: remove, path: /data/A}]"\n';
    const [c] = await stopOf(effectiveClusterVars(mem, { clusterPath: 'env' }));
    expect(c.evidence.seen).toContain('not valid JSON');
    // The same resource twice is refused too.
    files['env/kustomization.yaml'] = 'resources: [vars.yaml, again.yaml]\n';
    files['env/again.yaml'] = files['env/vars.yaml'];
    const [twice] = await stopOf(effectiveClusterVars(mem, { clusterPath: 'env' }));
    expect(twice.evidence.seen).toContain('ConfigMap/cluster-vars comes twice (env/vars.yaml and env/again.yaml)');
  });

  it('no cluster-vars in the build, or no kustomization at the path, is GITOPS_SOURCE_INVALID', async () => {
    expect((await stopOf(effectiveClusterVars(read, { clusterPath: 'broken/no-cluster-vars' })))[0].evidence.seen).toContain(
      'no ConfigMap flux-system/cluster-vars',
    );
    expect((await stopOf(values('broken/no-cluster-vars')))[0].evidence.seen).toContain(
      'Kustomization platform substitutes from ConfigMap flux-system/cluster-vars, which this build does not hold',
    );
    expect((await stopOf(effectiveClusterVars(read, { clusterPath: 'clusters/nowhere' })))[0].message).toContain('no kustomization.yaml');
  });
});

describe('Cilium values from the HelmRelease, substituted as Flux will', () => {
  it.each([
    ['clusters/lab', '10.77.0.9'],
    ['clusters/prod', '192.168.2.9'],
    ['clusters/dev', '192.168.1.49'],
  ])('%s: k8sServiceHost is that environment’s VIP', async (clusterPath, vip) => {
    const v = await values(clusterPath);
    expect(v.values.k8sServiceHost).toBe(vip);
    expect(v.values.k8sServicePort).toBe(6443);
    expect(v).toMatchObject({ chartVersion: '1.19.5', releaseName: 'cilium', namespace: 'kube-system', storageNamespace: 'kube-system' });
    expect(v.sourceFiles[0]).toBe(HR);
    expect(v.sourceFiles).toContain(`${clusterPath}/kustomization.yaml`);
  });

  it("takes the variables of the Flux Kustomization that applies the HelmRelease: defaults, and dev's inline postBuild.substitute", async () => {
    // "${CILIUM_OPERATOR_REPLICAS:=2}" is re-typed as Flux does (the number, not the string).
    expect(((await values('clusters/prod')).values.operator as { replicas: unknown }).replicas).toBe(2);
    const dev = await values('clusters/dev');
    expect((dev.values.operator as { replicas: unknown }).replicas).toBe(1);
    expect(dev.varOrigins.CILIUM_OPERATOR_REPLICAS).toBe('clusters/base/platform.yaml (Kustomization platform, postBuild.substitute)');
  });

  it('a Flux Kustomization without postBuild substitutes nothing: UNRESOLVED_SUBSTITUTION says so', async () => {
    const [c] = await stopOf(values('broken/no-postbuild'));
    expect(c.causeId).toBe('UNRESOLVED_SUBSTITUTION');
    expect(c.evidence.seen).toContain('defines no variable, so Flux substitutes nothing');
  });

  it('accepts the absolute HelmRelease path the inventory derives', async () => {
    const v = await ciliumValues({ checkout, helmReleasePath: `${checkout}${HR}`, clusterPath: 'clusters/prod' });
    expect(v.values.k8sServiceHost).toBe('192.168.2.9');
  });

  it.each([
    ['broken/undefined', 'K3S_API_HOST is not defined in cluster-vars'],
    ['broken/empty', 'K3S_API_HOST is empty'],
    ['broken/tbd', 'K3S_API_HOST is the placeholder "TBD-PROD-VIP"'],
  ])('%s: stops with UNRESOLVED_SUBSTITUTION naming K3S_API_HOST and the file, never an empty string', async (clusterPath, seen) => {
    const causes = await stopOf(values(clusterPath));
    expect(causes.map((c) => c.causeId)).toEqual(['UNRESOLVED_SUBSTITUTION']);
    expect(causes[0].message).toMatch(/^K3S_API_HOST in platform\/cilium\/helmrelease\.yaml \(spec\.values\.k8sServiceHost\)/);
    expect(causes[0].evidence.seen).toContain(seen);
    expect(causes[0].evidence.excerpt).toContain('"${K3S_API_HOST}"');
  });

  it('names where a placeholder came from', async () => {
    const [c] = await stopOf(values('broken/tbd'));
    expect(c.evidence.seen).toContain('set by broken/tbd/vars.yaml');
  });

  it('a HelmRelease that is missing is GITOPS_SOURCE_INVALID', async () => {
    const [c] = await stopOf(ciliumValues({ checkout, helmReleasePath: 'platform/cilium/nope.yaml', clusterPath: 'clusters/lab' }));
    expect(c.causeId).toBe('GITOPS_SOURCE_INVALID');
    expect(c.message).toContain('platform/cilium/nope.yaml');
  });
});
