// Causes that only a built cluster shows, produced as they happen to operators: someone deletes kube-vip's
// RBAC, or repoints the Cilium agents at a node (the 2026-09-06 finding: every agent dialled k3s-prod-1).
// A re-run must name them from what it sees live, not from the templates.
import { beforeAll, expect, it } from 'vitest';
import { hostExec } from '../../lab/api.ts';
import { NET } from '../../lab/config.ts';
import { LAB_SERVICE_CIDR } from '../../lab/inventory.ts';
import { serviceAddresses } from '../../src/inventory/service-addresses.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster, stopOf } from '../support/cluster.ts';
import { labInventory } from '../support/lab-inventory.ts';

const kubectl = (args: string) => hostExec('k3s-lab-1', `k3s kubectl ${args}`);
const re = (s: string) => s.replaceAll('.', '\\.');
const CLUSTER_IP = serviceAddresses(LAB_SERVICE_CIDR).kubernetes;

describeAsRoot('a built cluster that drifted', () => {
  const stateDir = freshStateDir();
  let inventory: string;

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    inventory = labInventory();
    const r = await bootstrap(['--until', 'cilium'], { stateDir, inventory });
    expect(r.code, r.stdout.slice(-3000)).toBe(0);
  });

  it('a drop-in in config.yaml.d replacing the cluster CIDR → K3S_DROPIN_OVERRIDES before anything is written, check mode too; an appending one passes', async () => {
    const dropin = '/etc/rancher/k3s/config.yaml.d/60-site.yaml';
    const seenOn = async () =>
      (await hostExec('k3s-lab-2', 'sha256sum /etc/rancher/k3s/config.yaml; systemctl show -p ActiveEnterTimestamp k3s.service')).stdout;
    const before = await seenOn();
    try {
      await hostExec(
        'k3s-lab-2',
        `mkdir -p /etc/rancher/k3s/config.yaml.d && printf 'cluster-cidr: 10.99.0.0/16\\nnode-label+:\\n  - site=lab\\n' > ${dropin}`,
      );
      const checked = await bootstrap(['--until', 'cilium', '--check', '--json'], { stateDir, inventory });
      expect(stopOf(checked)).toMatchObject({ cause: 'K3S_DROPIN_OVERRIDES', host: 'k3s-lab-2' });
      const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir, inventory });
      const stop = stopOf(r);
      expect(stop).toMatchObject({ cause: 'K3S_DROPIN_OVERRIDES', host: 'k3s-lab-2' });
      expect(stop.message).toBe(`k3s-lab-2: ${dropin} sets cluster-cidr, which replaces cluster-cidr in /etc/rancher/k3s/config.yaml`);
      expect(await seenOn()).toBe(before);
      // Appending to a list bootstrap writes, and a key it does not write, are the operator's own.
      await hostExec('k3s-lab-2', `printf 'tls-san+:\\n  - k8s.lab.example\\nnode-label+:\\n  - site=lab\\n' > ${dropin}`);
      const passed = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir, inventory });
      expect(passed.code, passed.stdout.slice(-3000)).toBe(0);
      expect(await seenOn()).toBe(before);
    } finally {
      await hostExec('k3s-lab-2', `rm -f ${dropin}`);
    }
  });

  it("a systemd drop-in pointing the agent's k3s at another config file → K3S_DROPIN_OVERRIDES, its value unsaid; a proxy's variables pass", async () => {
    const dropin = '/etc/systemd/system/k3s-agent.service.d/10-site.conf';
    try {
      await hostExec(
        'k3s-lab-agent-1',
        `mkdir -p ${dropin.replace(/\/[^/]+$/, '')} && printf '[Service]\\nEnvironment=K3S_CONFIG_FILE=/etc/rancher/k3s/site-secret.yaml\\n' > ${dropin}`,
      );
      const r = await bootstrap(['--only', 'agents', '--json'], { stateDir, inventory });
      const stop = stopOf(r);
      expect(stop).toMatchObject({ cause: 'K3S_DROPIN_OVERRIDES', host: 'k3s-lab-agent-1' });
      expect(stop.message).toBe(`k3s-lab-agent-1: ${dropin} sets K3S_CONFIG_FILE, which replaces /etc/rancher/k3s/config.yaml as the file k3s reads`);
      expect(r.stdout).not.toContain('site-secret');
      await hostExec('k3s-lab-agent-1', `printf '[Service]\\nEnvironment=HTTP_PROXY=http://10.77.0.1:3128\\nLimitNOFILE=65536\\n' > ${dropin}`);
      const passed = await bootstrap(['--only', 'agents', '--json'], { stateDir, inventory });
      expect(passed.code, passed.stdout.slice(-3000)).toBe(0);
    } finally {
      await hostExec('k3s-lab-agent-1', `rm -f ${dropin} && systemctl daemon-reload`);
    }
  });

  it('agents repointed at a node address → AGENT_SERVICE_HOST_DRIFT, read from the running agents', async () => {
    const node = hosts()[0].address;
    await kubectl(`-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST=${node}`);
    const t0 = Date.now();
    const r = await bootstrap(['--only', 'cilium', '--json'], { stateDir, inventory });
    const stop = stopOf(r);
    expect(stop).toMatchObject({ cause: 'AGENT_SERVICE_HOST_DRIFT' });
    // Any node's agent may be the first the gate reads: servers' and the agent's alike.
    expect(hosts().map((h) => h.name)).toContain(stop.host);
    expect(stop.evidence.seen).toMatch(new RegExp(`dials ${re(node)}, not the VIP ${re(NET.vip)}`));
    expect(Date.now() - t0).toBeLessThan(300_000);
    await kubectl(`-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST=${NET.vip}`);
  });

  it("agents stripped of KUBERNETES_SERVICE_HOST → AGENT_SERVICE_HOST_DRIFT naming the ClusterIP of the lab's service network", async () => {
    await kubectl('-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST-');
    const r = await bootstrap(['--only', 'cilium', '--json'], { stateDir, inventory });
    const stop = stopOf(r);
    expect(stop).toMatchObject({ cause: 'AGENT_SERVICE_HOST_DRIFT' });
    // kubelet injects the kubernetes Service's ClusterIP: the first address of k3s.serviceCidr (10.45.0.1), not 10.43.0.1.
    expect(stop.evidence.seen).toMatch(new RegExp(`has no KUBERNETES_SERVICE_HOST: it dials the ClusterIP ${re(CLUSTER_IP)}, not the VIP ${re(NET.vip)}$`));
    expect(r.ms).toBeLessThan(300_000);
    await kubectl(`-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST=${NET.vip}`);
  });

  it("kube-vip's RBAC deleted → the VIP goes, and a re-run names KUBE_VIP_RBAC_MISSING", async () => {
    await kubectl('delete clusterrolebinding system:kube-vip-binding');
    // The leader fails to renew (forbidden) and gives the VIP up after the renew deadline (10 s).
    const t0 = Date.now();
    let gone = false;
    while (!gone && Date.now() - t0 < 60_000) {
      const r = await hostExec('k3s-lab-2', `k3s kubectl --server https://${NET.vip}:6443 get --raw /livez --request-timeout=2s; true`);
      gone = r.stdout.trim() !== 'ok';
      if (!gone) await new Promise((res) => setTimeout(res, 1000));
    }
    expect(gone).toBe(true);
    const r = await bootstrap(['--only', 'kube-vip', '--json'], { stateDir, inventory });
    const stop = stopOf(r);
    expect(stop).toMatchObject({ cause: 'KUBE_VIP_RBAC_MISSING' });
    expect(stop.evidence.seen).toMatch(/plndr-cp-lock.*forbidden/);
    expect(r.ms).toBeLessThan(300_000);
    await resetCluster();
  });
});
