import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkCiliumValues, type ValuesExpectations } from '../../phases/cilium/values-gates.ts';
import { ciliumValues } from '../../src/gitops/values-source.ts';
import { cgroupProbeCommand, cgroupSetting, checkCgroupHostRoot } from '../../phases/cilium/cgroup.ts';
import { matchCiliumAgentLog } from '../../phases/cilium/agent-log.ts';
import { containersToRead } from '../../phases/cilium/pod-containers.ts';
import { checkAgentServiceHost } from '../../src/addons/cilium-agent-env.ts';

const checkout = fileURLToPath(new URL('../fixtures/gitops/', import.meta.url));
const prod: ValuesExpectations = {
  vip: '192.168.2.9',
  port: 6443,
  clusterCidr: '10.42.0.0/16',
  kubernetesIp: '10.43.0.1',
  nodes: [
    { name: 'k3s-prod-1', address: '192.168.2.10' },
    { name: 'k3s-prod-2', address: '192.168.2.11' },
  ],
};
const fixtureValues = async () => (await ciliumValues({ checkout, helmReleasePath: 'platform/cilium/helmrelease.yaml', clusterPath: 'clusters/prod' })).values;

/** The fixture's values with one change at a dotted path (undefined removes it). */
async function variant(path: string, value: unknown) {
  const values = structuredClone(await fixtureValues()) as Record<string, any>;
  const keys = path.split('.');
  const parent = keys.slice(0, -1).reduce((o, k) => (o[k] ??= {}), values);
  if (value === undefined) delete parent[keys.at(-1)!];
  else parent[keys.at(-1)!] = value;
  return values;
}

const stops = (values: Record<string, unknown>) =>
  checkCiliumValues(values, prod).map((c) => ({ id: c.causeId, seen: c.evidence.seen, excerpt: c.evidence.excerpt }));

describe('gates on the rendered Cilium values', () => {
  it("pass for the fixture's prod values", async () => {
    expect(stops(await fixtureValues())).toEqual([]);
  });

  it('names the 2026-09-01 value: k8sServiceHost empty', async () => {
    const [s] = stops(await variant('k8sServiceHost', ''));
    expect(s.id).toBe('SERVICE_HOST_NOT_VIP');
    expect(s.seen).toContain('k8sServiceHost is empty');
    expect(s.seen).toContain('10.43.0.1');
    expect(s.excerpt).toBe('spec.values.k8sServiceHost: ""');
  });

  it("names a node's address: k8sServiceHost = k3s-prod-1", async () => {
    const [s] = stops(await variant('k8sServiceHost', '192.168.2.10'));
    expect(s.id).toBe('SERVICE_HOST_NOT_VIP');
    expect(s.seen).toContain("k3s-prod-1's own address 192.168.2.10, not the VIP 192.168.2.9");
  });

  it('names any other host, and an unset one', async () => {
    expect(stops(await variant('k8sServiceHost', '192.168.1.49'))[0].seen).toContain('"192.168.1.49", not the VIP 192.168.2.9');
    expect(stops(await variant('k8sServiceHost', undefined))[0].seen).toContain('k8sServiceHost is unset');
  });

  it('SERVICE_PORT_MISMATCH for another port; a numeric string is the same port', async () => {
    const [s] = stops(await variant('k8sServicePort', 6444));
    expect(s).toMatchObject({ id: 'SERVICE_PORT_MISMATCH', excerpt: 'spec.values.k8sServicePort: 6444' });
    expect(stops(await variant('k8sServicePort', '6443'))).toEqual([]);
  });

  it('KPR_MISMATCH for false or unset; true and "true" pass', async () => {
    expect(stops(await variant('kubeProxyReplacement', false))[0]).toMatchObject({ id: 'KPR_MISMATCH', excerpt: 'spec.values.kubeProxyReplacement: false' });
    expect(stops(await variant('kubeProxyReplacement', undefined))[0].seen).toContain('the chart default "false"');
    expect(stops(await variant('kubeProxyReplacement', 'true'))).toEqual([]);
  });

  it("POD_CIDR_MISMATCH for another CIDR and for the chart's 10.0.0.0/8 default; kubernetes IPAM passes", async () => {
    const [s] = stops(await variant('ipam.operator.clusterPoolIPv4PodCIDRList', ['10.0.0.0/8']));
    expect(s).toMatchObject({ id: 'POD_CIDR_MISMATCH', excerpt: 'spec.values.ipam.operator.clusterPoolIPv4PodCIDRList: ["10.0.0.0/8"]' });
    expect(s.seen).toContain('["10.42.0.0/16"]');
    expect(stops(await variant('ipam.operator', undefined))[0].seen).toContain('unset (the chart default ["10.0.0.0/8"])');
    expect(stops(await variant('ipam', { mode: 'kubernetes' }))).toEqual([]);
    expect(stops(await variant('ipam.operator.clusterPoolIPv4PodCIDRList', '10.42.0.0/16'))).toEqual([]);
    expect(stops(await variant('ipam.operator.clusterPoolIPv4PodCIDRList', '10.42.0.0/16 10.0.0.0/8'))[0].id).toBe('POD_CIDR_MISMATCH');
    expect(stops(await variant('ipam.mode', 'multi-pool'))[0]).toMatchObject({ id: 'POD_CIDR_MISMATCH', excerpt: 'spec.values.ipam.mode: "multi-pool"' });
  });

  it('ROLLOUT_TOO_WIDE for maxUnavailable 2 and for unset (the chart default 2)', async () => {
    const [s] = stops(await variant('updateStrategy.rollingUpdate.maxUnavailable', 2));
    expect(s).toMatchObject({ id: 'ROLLOUT_TOO_WIDE', excerpt: 'spec.values.updateStrategy.rollingUpdate.maxUnavailable: 2' });
    expect(stops(await variant('updateStrategy', undefined))[0].seen).toContain('unset (the chart default 2)');
  });

  it('reports every failing gate at once', async () => {
    const values = { k8sServiceHost: '', kubeProxyReplacement: 'false' };
    expect(checkCiliumValues(values, prod).map((c) => c.causeId)).toEqual([
      'SERVICE_HOST_NOT_VIP',
      'SERVICE_PORT_MISMATCH',
      'KPR_MISMATCH',
      'POD_CIDR_MISMATCH',
      'ROLLOUT_TOO_WIDE',
    ]);
  });
});

describe('cgroup.hostRoot must be the host cgroup2 root', () => {
  const fixed = { hostRoot: '/sys/fs/cgroup', autoMount: false };
  const chartDefault = cgroupSetting({});

  it("reads the setting, with the chart's defaults when unset", async () => {
    expect(cgroupSetting(await fixtureValues())).toEqual(fixed);
    expect(chartDefault).toEqual({ hostRoot: '/run/cilium/cgroupv2', autoMount: true });
    expect(cgroupProbeCommand(fixed)).toBe('stat -fc %T /sys/fs/cgroup');
  });

  it('autoMount disabled: every node must show cgroup2fs before the install (the 2026-10-03 case)', () => {
    const seen = [
      { host: 'k3s-prod-1', stdout: 'cgroup2fs\n', code: 0 },
      { host: 'k3s-prod-2', stdout: 'tmpfs\n', code: 0 },
      { host: 'k3s-prod-3', stdout: '', code: 1 },
    ];
    const s = checkCgroupHostRoot({ hostRoot: '/run/cilium/cgroupv2', autoMount: false }, seen, 'before-install');
    expect(s.map((c) => [c.causeId, c.host])).toEqual([
      ['CGROUP_HOSTROOT_NOT_CGROUP2', 'k3s-prod-2'],
      ['CGROUP_HOSTROOT_NOT_CGROUP2', 'k3s-prod-3'],
    ]);
    expect(s[0].evidence.seen).toBe(
      '/run/cilium/cgroupv2 is a tmpfs filesystem, not cgroup2fs (cgroup.autoMount.enabled is false, so the chart only bind-mounts what is there)',
    );
    expect(s[0].evidence.command).toBe('stat -fc %T /run/cilium/cgroupv2');
  });

  it('autoMount enabled: a path still to be mounted passes before the install, not after; cgroup v1 never', () => {
    const unmounted = [{ host: 'a', stdout: 'tmpfs', code: 0 }];
    expect(checkCgroupHostRoot(chartDefault, unmounted, 'before-install')).toEqual([]);
    expect(checkCgroupHostRoot(chartDefault, unmounted, 'installed').map((c) => c.causeId)).toEqual(['CGROUP_HOSTROOT_NOT_CGROUP2']);
    expect(checkCgroupHostRoot(chartDefault, [{ host: 'a', stdout: 'cgroupfs', code: 0 }], 'before-install')).toHaveLength(1);
  });
});

describe("naming a Cilium agent's failure from its log", () => {
  it('an i/o timeout to 10.43.0.1 is CILIUM_SERVICE_HOST_FALLBACK', () => {
    const line =
      'level=error msg="Unable to contact k8s api-server" error="Get \\"https://10.43.0.1:443/api/v1/namespaces/kube-system\\": dial tcp 10.43.0.1:443: i/o timeout"';
    expect(matchCiliumAgentLog(`level=info msg="Cilium starting"\n${line}`, '10.43.0.1')).toEqual({ causeId: 'CILIUM_SERVICE_HOST_FALLBACK', line });
    expect(matchCiliumAgentLog('level=info msg="Connected to apiserver" host=192.168.2.9', '10.43.0.1')).toBeUndefined();
  });

  it("the timeout is to THIS cluster's kubernetes ClusterIP, the first address of its service network", () => {
    const line =
      'level=error msg="Unable to contact k8s api-server" error="Get \\"https://10.45.0.1:443/api/v1/namespaces/kube-system\\": dial tcp 10.45.0.1:443: i/o timeout"';
    expect(matchCiliumAgentLog(line, '10.45.0.1')).toEqual({ causeId: 'CILIUM_SERVICE_HOST_FALLBACK', line });
    // On a cluster whose ClusterIP is another address this is no fallback, only an API it cannot reach.
    expect(matchCiliumAgentLog(line, '10.43.0.1')?.causeId).toBe('CILIUM_API_UNREACHABLE');
  });

  it("the config init container's words for any other address it cannot reach are CILIUM_API_UNREACHABLE", () => {
    // cilium-dbg build-config's log (Cilium >= 1.18, slog): the k8s client's tries, then the error.
    const log = [
      'time=2026-01-03T23:17:21.849247774Z level=info msg="Establishing connection to apiserver" subsys=cilium-dbg module=k8s-client ipAddr=https://192.168.2.9:6443',
      'time=2026-01-03T23:17:26.850125515Z level=error msg="Unable to contact k8s api-server" subsys=cilium-dbg module=k8s-client ipAddr=https://192.168.2.9:6443 error="Get \\"https://192.168.2.9:6443/api/v1/namespaces/kube-system\\": dial tcp 192.168.2.9:6443: connect: no route to host"',
      'Error: Build config failed: failed to start: Get "https://192.168.2.9:6443/api/v1/namespaces/kube-system": dial tcp 192.168.2.9:6443: connect: no route to host',
    ];
    expect(matchCiliumAgentLog(log.join('\n'), '10.43.0.1')).toEqual({ causeId: 'CILIUM_API_UNREACHABLE', line: log[1] });
    // Only the tries so far: nothing to name yet (the client is still within its minute).
    expect(matchCiliumAgentLog(log[0]!, '10.43.0.1')).toBeUndefined();
  });
});

describe('which containers of a Cilium pod the gate reads', () => {
  const init = (name: string, state: any, lastState: any = {}) => ({ name, state, lastState });
  it('the init container the pod is stuck on (running or in back-off after a failure), not those that never started', () => {
    const pod = {
      status: {
        initContainerStatuses: [
          init('config', { waiting: { reason: 'CrashLoopBackOff' } }, { terminated: { exitCode: 1 } }),
          init('mount-cgroup', { waiting: { reason: 'PodInitializing' } }),
        ],
        containerStatuses: [{ name: 'cilium-agent', state: { waiting: { reason: 'PodInitializing' } } }],
      },
    };
    expect(containersToRead(pod)).toEqual(['config']);
  });
  it('past the completed init containers: the agent once it has started (or crashed)', () => {
    const done = init('config', { terminated: { exitCode: 0 } });
    expect(containersToRead({ status: { initContainerStatuses: [done], containerStatuses: [{ name: 'cilium-agent', state: { running: {} } }] } })).toEqual([
      'cilium-agent',
    ]);
    expect(
      containersToRead({
        status: { initContainerStatuses: [done], containerStatuses: [{ name: 'cilium-agent', state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
      }),
    ).toEqual(['cilium-agent']);
    expect(containersToRead({ status: { containerStatuses: [{ name: 'cilium-agent', state: { waiting: { reason: 'ContainerCreating' } } }] } })).toEqual([]);
  });
});

describe("the running agents' KUBERNETES_SERVICE_HOST", () => {
  it('passes when every agent dials the VIP, names each one that does not', () => {
    const vip = { KUBERNETES_SERVICE_HOST: '192.168.2.9', KUBERNETES_SERVICE_PORT: '6443' };
    expect(checkAgentServiceHost([{ name: 'cilium-a', node: 'k3s-prod-1', env: vip }], '192.168.2.9', 6443, '10.45.0.1')).toEqual([]);
    const stops = checkAgentServiceHost(
      [
        { name: 'cilium-a', node: 'k3s-prod-1', env: { KUBERNETES_SERVICE_HOST: '192.168.2.10', KUBERNETES_SERVICE_PORT: '6443' } },
        { name: 'cilium-b', node: 'k3s-prod-2', env: {} },
        { name: 'cilium-c', node: 'k3s-prod-3', env: vip },
      ],
      '192.168.2.9',
      6443,
      '10.45.0.1',
    );
    expect(stops.map((s) => [s.causeId, s.host, s.evidence.seen])).toEqual([
      ['AGENT_SERVICE_HOST_DRIFT', 'k3s-prod-1', 'agent cilium-a dials 192.168.2.10, not the VIP 192.168.2.9'],
      ['AGENT_SERVICE_HOST_DRIFT', 'k3s-prod-2', 'agent cilium-b has no KUBERNETES_SERVICE_HOST: it dials the ClusterIP 10.45.0.1, not the VIP 192.168.2.9'],
    ]);
  });
});
