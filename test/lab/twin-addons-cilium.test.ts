// The helm-controller and Cilium agent twins in the lab: the engine builds 3 servers (--until k3s-join),
// then the HelmChart the engine renders (the real chart ../shared/testdata/cilium-1.19.5.tgz inside) is
// put into every server's auto-deploy folder, first with an empty k8sServiceHost (the 2026-09-01
// deadlock), then with the VIP before kube-vip announces it (an API nothing answers on: the engine's
// rollout gate names it from the config init container), then with kube-vip running.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hostExec } from '../../lab/api.ts';
import { renderHelmChart } from '../../src/k3s/helmchart.ts';
import { matchCiliumAgentLog } from '../../phases/cilium/agent-log.ts';
import { ciliumRolledOut } from '../../phases/cilium/rollout-gate.ts';
import { renderKubeVip } from '../../phases/kube-vip/render.ts';
import { CauseError } from '../../src/errors.ts';
import { decodeRelease } from '../../lab/twin/addons/helm/release.ts';
import { cleanAddonTraces, kubectl, kubectlJson, VIP, waitUntil, writeManifest } from '../../lab/twin/addons/lab-support.ts';
import { LAB_CLUSTER_CIDR, LAB_SERVICE_CIDR } from '../../lab/inventory.ts';
import { serviceAddresses } from '../../src/inventory/service-addresses.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster } from '../support/cluster.ts';
import { runGate } from '../support/lab-gate.ts';

const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
const S1 = SERVERS[0];
/** The lab's networks are not k3s's defaults: agents without k8sServiceHost dial this ClusterIP (10.45.0.1). */
const CLUSTER_IP = serviceAddresses(LAB_SERVICE_CIDR).kubernetes;
const IP_RE = CLUSTER_IP.replaceAll('.', '\\.');
const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
const baseValues = {
  kubeProxyReplacement: true,
  ipam: { mode: 'cluster-pool', operator: { clusterPoolIPv4PodCIDRList: [LAB_CLUSTER_CIDR] } },
  updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
  operator: { replicas: 1 },
};

async function deployCilium(values: Record<string, unknown>): Promise<void> {
  const text = renderHelmChart({
    releaseName: 'cilium',
    namespace: 'kube-system',
    chartTgz: readFileSync(CHART),
    values: { ...baseValues, ...values },
    version: '1.19.5',
  });
  for (const h of SERVERS) await writeManifest(h, 'cilium.yaml', text);
}

const agentPods = async () => (await kubectlJson(S1, 'get pods -n kube-system -l k8s-app=cilium')).items as any[];
const ready = (p: any) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
const nodeReady = async () =>
  (await kubectl(S1, `get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'`)).trim().split('\n');
// The config init container dials the API first; the agent container does not start before it succeeds.
const configLogs = async () => Promise.all((await agentPods()).map((p) => kubectl(S1, `logs -n kube-system ${p.metadata.name} -c config`, true)));
const envOf = (c: any) => Object.fromEntries((c.env ?? []).filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value]));
const releases = async () => (await kubectlJson(S1, 'get secrets -n kube-system -l owner=helm,name=cilium')).items as any[];

describeAsRoot('helm-controller and Cilium agent twins', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    await cleanAddonTraces(SERVERS);
    const r = await bootstrap(['--until', 'k3s-join'], { stateDir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  afterAll(async () => {
    await cleanAddonTraces(SERVERS).catch(() => undefined);
    await resetCluster();
  });

  it('k8sServiceHost "": the release, a DaemonSet without KUBERNETES_SERVICE_HOST, agents time out on the ClusterIP of the lab\'s service network, nodes NotReady', async () => {
    await deployCilium({ k8sServiceHost: '' });
    const rel = await waitUntil('the Helm release', async () => (await releases()).find((s) => s.metadata.name === 'sh.helm.release.v1.cilium.v1'), 30_000);
    expect(rel.type).toBe('helm.sh/release.v1');
    expect(rel.metadata.labels).toMatchObject({ owner: 'helm', name: 'cilium', status: 'deployed', version: '1' });
    expect(decodeRelease(rel.data.release).config.k8sServiceHost).toBe('');
    const ds = await kubectlJson(S1, 'get ds -n kube-system cilium');
    const agent = ds.spec.template.spec.containers.find((c: any) => c.name === 'cilium-agent');
    expect(agent.env.map((e: any) => e.name)).not.toContain('KUBERNETES_SERVICE_HOST');
    expect(ds.spec.updateStrategy.rollingUpdate.maxUnavailable).toBe(1);
    expect(await kubectl(S1, 'get deploy -n kube-system cilium-operator -o name')).toContain('cilium-operator');
    // Cilium's k8s client tries for a minute (each dial to the black-holed ClusterIP waits 30 s) before it
    // gives up: the line comes after about 65 s, in the config init container.
    const logs = await waitUntil(
      'the i/o timeout in every config log',
      async () => {
        const l = await configLogs();
        return l.length === 3 && l.every((x) => x.includes(`dial tcp ${CLUSTER_IP}:443: i/o timeout`)) ? l : undefined;
      },
      100_000,
      2000,
    );
    for (const l of logs) {
      expect(l).toMatch(
        new RegExp(
          `msg="Unable to contact k8s api-server" subsys=cilium-dbg module=k8s-client ipAddr=https://${IP_RE}:443 error=.*dial tcp ${IP_RE}:443: i/o timeout`,
        ),
      );
      expect(l).toContain(
        `Error: Build config failed: failed to start: Get "https://${CLUSTER_IP}:443/api/v1/namespaces/kube-system": dial tcp ${CLUSTER_IP}:443: i/o timeout`,
      );
      expect(matchCiliumAgentLog(l, CLUSTER_IP)?.causeId).toBe('CILIUM_SERVICE_HOST_FALLBACK');
    }
    // As kubectl shows it: the pod stuck in its first init container, the agent container never started.
    await waitUntil(
      'Init:CrashLoopBackOff',
      async () =>
        (await kubectl(S1, 'get pods -n kube-system -l k8s-app=cilium --no-headers'))
          .trim()
          .split('\n')
          .every((l) => /^cilium-\w{5} +0\/1 +Init:(CrashLoopBackOff|Error) +[1-9]/.test(l)),
      20_000,
      1000,
    );
    const [pod] = await agentPods();
    expect(pod.status.phase).toBe('Pending');
    expect(pod.status.initContainerStatuses[0]).toMatchObject({ name: 'config', lastState: { terminated: { exitCode: 1, reason: 'Error' } } });
    expect(pod.status.containerStatuses[0].state).toEqual({ waiting: { reason: 'PodInitializing' } });
    const noContainer = await hostExec(S1, `k3s kubectl logs -n kube-system ${pod.metadata.name}`, { allowFail: true });
    expect(noContainer.code).not.toBe(0);
    expect(noContainer.stderr).toContain(`container "cilium-agent" in pod "${pod.metadata.name}" is waiting to start: PodInitializing`);
    expect((await agentPods()).filter(ready)).toEqual([]);
    expect(await nodeReady()).toEqual(['False', 'False', 'False']);
  });

  it('k8sServiceHost = the VIP before kube-vip announces it: release v2, pods rolled with the VIP in their env, the gate names CILIUM_API_UNREACHABLE from config', async () => {
    await deployCilium({ k8sServiceHost: VIP, k8sServicePort: 6443 });
    await waitUntil('release v2', async () => (await releases()).some((s) => s.metadata.labels.version === '2'), 30_000);
    const rs = await releases();
    expect(rs.find((s) => s.metadata.labels.version === '1').metadata.labels.status).toBe('superseded');
    expect(rs.find((s) => s.metadata.labels.version === '2').metadata.labels.status).toBe('deployed');
    const pods = await waitUntil(
      'three agents with the VIP in their env',
      async () => {
        const p = await agentPods();
        return p.length === 3 && p.every((x) => envOf(x.spec.containers[0]).KUBERNETES_SERVICE_HOST === VIP) ? p : undefined;
      },
      60_000,
      2000,
    );
    expect(pods.map((p) => envOf(p.spec.containers[0]).KUBERNETES_SERVICE_PORT)).toEqual(['6443', '6443', '6443']);
    // The engine's rollout gate, within its budget, names the cause from the config init container's words
    // (the agent container has no log: it never started). Nothing answers on the VIP yet: no route to host.
    const gate = await runGate(ciliumRolledOut, S1, { host: VIP, port: 6443 });
    expect(gate.error).toBeInstanceOf(CauseError);
    const stop = gate.error as CauseError;
    expect(stop.causeId, stop.message).toBe('CILIUM_API_UNREACHABLE');
    expect(SERVERS).toContain(stop.host);
    expect(stop.evidence.command).toMatch(/^kubectl logs -n kube-system cilium-\w{5} -c config$/);
    expect(stop.evidence.seen).toContain(`msg="Unable to contact k8s api-server" subsys=cilium-dbg module=k8s-client ipAddr=https://${VIP}:6443`);
    expect(stop.evidence.seen).toContain(`dial tcp ${VIP}:6443`);
    expect(gate.tookMs).toBeLessThan(ciliumRolledOut.budgetMs);
    expect((await agentPods()).filter(ready)).toEqual([]);
    expect(await nodeReady()).toEqual(['False', 'False', 'False']);
  });

  it('once kube-vip announces the VIP: agents Ready, CNI config written, nodes Ready, kube-proxy replacement on', async () => {
    const kv = renderKubeVip({ vip: VIP, port: 6443, interfaceName: 'eth0' });
    for (const h of SERVERS) await writeManifest(h, 'kube-vip.yaml', kv);
    // Config init containers in back-off retry after 10, 20, 40 s…, then the rest run and the agent starts.
    await waitUntil('three Ready agents', async () => (await agentPods()).filter(ready).length === 3, 150_000, 2000);
    await waitUntil('three Ready nodes', async () => (await nodeReady()).every((s) => s === 'True'), 30_000, 2000);
    for (const h of SERVERS) {
      expect((await hostExec(h, 'cat /etc/cni/net.d/05-cilium.conflist')).stdout).toContain('"cilium-cni"');
      const status = JSON.parse(
        (await hostExec(h, 'k3s crictl exec "$(k3s crictl ps --name cilium-agent --state running -q)" cilium-dbg status -o json')).stdout,
      );
      expect(status['kube-proxy-replacement'].mode).toBe('True');
      expect(status.kubernetes.state).toBe('Ok');
      // `k3s crictl` ran the crictl unpacked into the data dir (as k3s execs its own); the whole twin, run as
      // Node's script (past the shell loader), answers the same.
      const unpacked = await hostExec(h, 'readlink /var/lib/rancher/k3s/data/current && test -x /var/lib/rancher/k3s/data/current/bin/crictl && echo ok');
      expect(unpacked.stdout).toMatch(/^\/var\/lib\/rancher\/k3s\/data\/[0-9a-f]{64}\nok\n$/);
      const light = await hostExec(h, 'k3s crictl ps --name cilium-agent -q');
      const whole = await hostExec(h, '/opt/bootstrap-lab/bin/node /usr/local/bin/k3s crictl ps --name cilium-agent -q');
      expect(light.stdout).toMatch(/^[0-9a-f]{32,64}\n$/);
      expect(light).toMatchObject({ code: 0, stdout: whole.stdout });
    }
    const ds = await kubectlJson(S1, 'get ds -n kube-system cilium');
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3 });
    const op = await kubectlJson(S1, 'get deploy -n kube-system cilium-operator');
    expect(op.status.availableReplicas).toBe(1);
    // What `kubectl rollout status` decides from: the spec observed, every pod updated and available.
    expect(ds.status.observedGeneration).toBe(ds.metadata.generation);
    expect(op.status).toMatchObject({ observedGeneration: op.metadata.generation, updatedReplicas: 1, availableReplicas: 1 });
  });

  it('changed values on a healthy DaemonSet: release v3 and a roll that replaces one pod at a time (maxUnavailable 1)', async () => {
    const before = new Set((await agentPods()).map((p) => p.metadata.name));
    await deployCilium({ k8sServiceHost: VIP, k8sServicePort: 6443, extraEnv: [{ name: 'ROLL', value: '3' }] });
    let worst = 0;
    await waitUntil(
      'three new Ready agents',
      async () => {
        const p = await agentPods();
        const fresh = p.filter((x) => !before.has(x.metadata.name));
        worst = Math.max(worst, 3 - p.filter((x) => ready(x)).length);
        return fresh.length === 3 && fresh.every(ready);
      },
      90_000,
      250,
    );
    expect(worst).toBeLessThanOrEqual(1);
    expect((await releases()).find((s) => s.metadata.labels.status === 'deployed').metadata.labels.version).toBe('3');
  });
});
