// The DaemonSet placement and pod env the add-on twins use, against the manifests the engine renders.
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderKubeVip } from '../../phases/kube-vip/render.ts';
import { containerEnv, maxUnavailable, podFitsNode, podFromTemplate, podNameFor, templateHash } from '../../lab/twin/addons/scheduling.ts';
import { kubeVipConfig } from '../../lab/twin/addons/kube-vip/config.ts';
import { kubeVipContainer } from '../../lab/twin/addons/kube-vip/program.ts';
import { kubernetesServiceIP, serviceRange } from '../../lab/twin/service-network.ts';

const kubeVipDs = () =>
  parseAllDocuments(renderKubeVip({ vip: '10.77.0.9', port: 6443, interfaceName: 'eth0' }))
    .map((d) => d.toJSON())
    .find((o) => o.kind === 'DaemonSet');
const server = {
  name: 'k3s-lab-1',
  labels: { 'node-role.kubernetes.io/control-plane': 'true', 'node-role.kubernetes.io/master': 'true' },
  taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }],
};
const agent = { name: 'k3s-lab-agent-1', labels: { 'kubernetes.io/os': 'linux' }, taints: [] };

describe('DaemonSet placement', () => {
  it("kube-vip's DaemonSet runs on a NotReady server and not on an agent", () => {
    const spec = kubeVipDs().spec.template.spec;
    expect(podFitsNode(spec, server)).toBe(true);
    expect(podFitsNode(spec, agent)).toBe(false);
  });

  it('without tolerations a pod does not land on a node tainted not-ready:NoSchedule', () => {
    const spec = { ...kubeVipDs().spec.template.spec, tolerations: [] };
    expect(podFitsNode(spec, server)).toBe(false);
    expect(podFitsNode({ ...spec, tolerations: [{ operator: 'Exists' }] }, server)).toBe(true);
  });

  it('nodeSelector must match', () => {
    expect(podFitsNode({ nodeSelector: { 'kubernetes.io/os': 'linux' } }, agent)).toBe(true);
    expect(podFitsNode({ nodeSelector: { 'kubernetes.io/os': 'linux' } }, { ...agent, labels: {} })).toBe(false);
  });

  it('pods get a stable name per DaemonSet, node and template, in the shape <ds>-<5 chars>', () => {
    const a = podNameFor('kube-vip-ds', 'uid-1', 'k3s-lab-1', 'h1');
    expect(a).toMatch(/^kube-vip-ds-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(podNameFor('kube-vip-ds', 'uid-1', 'k3s-lab-1', 'h1')).toBe(a);
    expect(podNameFor('kube-vip-ds', 'uid-1', 'k3s-lab-2', 'h1')).not.toBe(a);
    expect(podNameFor('kube-vip-ds', 'uid-1', 'k3s-lab-1', 'h2')).not.toBe(a);
  });

  it('maxUnavailable: number, percentage (rounded down, at least 1), default 1', () => {
    expect(maxUnavailable({ spec: { updateStrategy: { rollingUpdate: { maxUnavailable: 2 } } } }, 3)).toBe(2);
    expect(maxUnavailable({ spec: { updateStrategy: { rollingUpdate: { maxUnavailable: '50%' } } } }, 3)).toBe(1);
    expect(maxUnavailable({ spec: {} }, 3)).toBe(1);
  });
});

describe('the env a container sees', () => {
  const KUBERNETES = { host: '10.43.0.1', port: '443' };
  it("kube-vip's pod: the manifest's values, the node name from the fieldRef, the local API", () => {
    const ds = { ...kubeVipDs(), metadata: { ...kubeVipDs().metadata, uid: 'u', generation: 1 } };
    const pod = podFromTemplate(ds, 'k3s-lab-2', templateHash(ds.spec.template));
    expect(pod.spec.nodeName).toBe('k3s-lab-2');
    const cfg = kubeVipConfig(containerEnv(kubeVipContainer(ds), pod, KUBERNETES), 'k3s-lab-2');
    expect(cfg).toMatchObject({
      address: '10.77.0.9',
      interfaceName: 'eth0',
      subnet: '32',
      nodeName: 'k3s-lab-2',
      leaseName: 'plndr-cp-lock',
      leaseDurationS: 15,
      renewDeadlineS: 10,
      retryPeriodS: 2,
      apiHost: '127.0.0.1',
      apiPort: 6443,
      controlPlane: true,
      leaderElection: true,
      arp: true,
    });
  });

  it("without KUBERNETES_SERVICE_HOST in the spec the process gets kubelet's: the kubernetes Service ClusterIP", () => {
    const env = containerEnv(
      { env: [{ name: 'address', value: '10.77.0.9' }] },
      { spec: { nodeName: 'n' } },
      { host: kubernetesServiceIP(serviceRange('10.45.0.0/16')), port: '443' },
    );
    expect(env.KUBERNETES_SERVICE_HOST).toBe('10.45.0.1');
    expect(env.KUBERNETES_SERVICE_PORT).toBe('443');
  });

  it('an explicit empty value stays empty (it is not replaced by the injected one)', () => {
    const env = containerEnv(
      {
        env: [
          { name: 'KUBERNETES_SERVICE_HOST', value: '10.77.0.9' },
          { name: 'KUBERNETES_SERVICE_PORT', value: '' },
        ],
      },
      { spec: {} },
      KUBERNETES,
    );
    expect(env).toMatchObject({ KUBERNETES_SERVICE_HOST: '10.77.0.9', KUBERNETES_SERVICE_PORT: '' });
  });
});
