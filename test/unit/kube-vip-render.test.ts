import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KUBE_VIP_MANIFEST, renderKubeVip } from '../../phases/kube-vip/render.ts';

const input = { vip: '192.168.2.9', port: 6443, interfaceName: 'eth0' };
const docs = () => parseAllDocuments(renderKubeVip(input)).map((d) => d.toJS());
const daemonSet = () => docs().find((d) => d.kind === 'DaemonSet');
const env = () => {
  const list: { name: string; value?: string; valueFrom?: unknown }[] = daemonSet().spec.template.spec.containers[0].env;
  return Object.fromEntries(list.map((e) => [e.name, e.value ?? e.valueFrom]));
};

describe('kube-vip manifest', () => {
  it('is one file in the k3s auto-deploy folder with the RBAC and the DaemonSet', () => {
    expect(KUBE_VIP_MANIFEST).toBe('/var/lib/rancher/k3s/server/manifests/kube-vip.yaml');
    expect(docs().map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'ServiceAccount/kube-vip',
      'ClusterRole/system:kube-vip-role',
      'ClusterRoleBinding/system:kube-vip-binding',
      'DaemonSet/kube-vip-ds',
    ]);
  });

  it('lets kube-vip hold its lease: leases in coordination.k8s.io, bound to the ServiceAccount', () => {
    const role = docs().find((d) => d.kind === 'ClusterRole');
    expect(role.rules).toContainEqual({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'get', 'watch', 'update', 'create'] });
    const binding = docs().find((d) => d.kind === 'ClusterRoleBinding');
    expect(binding.roleRef.name).toBe('system:kube-vip-role');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'kube-vip', namespace: 'kube-system' }]);
    expect(daemonSet().spec.template.spec.serviceAccountName).toBe('kube-vip');
  });

  it('sets every environment variable of the control-plane VIP with leader election', () => {
    expect(env()).toEqual({
      vip_arp: 'true',
      port: '6443',
      vip_nodename: { fieldRef: { fieldPath: 'spec.nodeName' } },
      vip_interface: 'eth0',
      vip_subnet: '32',
      cp_enable: 'true',
      cp_namespace: 'kube-system',
      svc_enable: 'false',
      vip_leaderelection: 'true',
      vip_leasename: 'plndr-cp-lock',
      vip_leaseduration: '15',
      vip_renewdeadline: '10',
      vip_retryperiod: '2',
      address: '192.168.2.9',
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: '6443',
    });
  });

  it('never uses vip_cidr (removed in kube-vip 0.9, silently ignored) and takes a given subnet', () => {
    const text = renderKubeVip({ ...input, subnet: '24' });
    expect(text).not.toContain('vip_cidr');
    expect(text).toMatch(/name: vip_subnet\n\s+value: "24"/);
  });

  it('dials the local API server, not the ClusterIP, whatever port the VIP is on', () => {
    const text = renderKubeVip({ ...input, port: 8443 });
    const ds = parseAllDocuments(text)
      .map((d) => d.toJS())
      .find((d) => d.kind === 'DaemonSet');
    const e = Object.fromEntries(ds.spec.template.spec.containers[0].env.map((x: { name: string; value?: string }) => [x.name, x.value]));
    expect(e.port).toBe('8443');
    expect(e.KUBERNETES_SERVICE_HOST).toBe('127.0.0.1');
    expect(e.KUBERNETES_SERVICE_PORT).toBe('6443');
  });

  it('runs on the host network of NotReady control-plane nodes, with NET_ADMIN and NET_RAW', () => {
    const spec = daemonSet().spec.template.spec;
    expect(spec.hostNetwork).toBe(true);
    expect(spec.tolerations).toEqual([
      { effect: 'NoSchedule', operator: 'Exists' },
      { effect: 'NoExecute', operator: 'Exists' },
    ]);
    const terms = spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(terms).toContainEqual({ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] });
    expect(spec.containers[0].securityContext.capabilities.add).toEqual(['NET_ADMIN', 'NET_RAW']);
    expect(spec.containers[0].args).toEqual(['manager']);
    expect(daemonSet().metadata.namespace).toBe('kube-system');
  });

  it('renders byte-identical output for the same input, and differs when the VIP does', () => {
    expect(renderKubeVip({ ...input })).toBe(renderKubeVip({ vip: '192.168.2.9', interfaceName: 'eth0', port: 6443 }));
    expect(renderKubeVip({ ...input, vip: '192.168.2.8' })).not.toBe(renderKubeVip(input));
  });
});
