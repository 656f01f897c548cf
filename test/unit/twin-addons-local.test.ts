// The add-on twins in a k3s twin server run as a process on this machine (loopback address, no lab):
// K3S_TWIN_ADDON_ROOT keeps their files (CNI config, status socket, pod logs, the VIP) under a folder.
// The lab tests (test/lab/twin-addons-*.test.ts) show the same on real hosts with a real NIC and ARP.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML, { parseAllDocuments, stringify } from 'yaml';
import { buildTwin } from '../../lab/twin/build.ts';
import { startLocal, waitFor, type LocalServer } from '../../lab/twin/local.ts';
import { renderKubeVip } from '../../phases/kube-vip/render.ts';
import { renderHelmChart } from '../../src/k3s/helmchart.ts';
import { matchKubeVipLog } from '../../phases/kube-vip/log-causes.ts';

const IP = '127.33.0.1';
const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
let root: string;
let s: LocalServer;
let bin: string;
let addonRoot: string;
let manifests: string;

function api(path: string): Promise<{ status: number; body: string }> {
  const kc = YAML.parse(readFileSync(join(root, 's1', 'k3s.yaml'), 'utf8'));
  const b = (x: string) => Buffer.from(x, 'base64');
  return new Promise((resolve, reject) => {
    https
      .get(
        `https://${IP}:6443${path}`,
        {
          ca: b(kc.clusters[0].cluster['certificate-authority-data']),
          cert: b(kc.users[0].user['client-certificate-data']),
          key: b(kc.users[0].user['client-key-data']),
        },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      )
      .on('error', reject);
  });
}
const json = async (path: string) => JSON.parse((await api(path)).body);
const pods = async (selector: string) => (await json(`/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent(selector)}`)).items as any[];
const podLog = async (name: string) => (await api(`/api/v1/namespaces/kube-system/pods/${name}/log`)).body;
const ready = (p: any) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

/** The engine's kube-vip manifest, dialling this server's API (it binds to its own address, not 127.0.0.1). */
function kubeVip(iface = 'eth0'): string {
  return parseAllDocuments(renderKubeVip({ vip: '127.33.0.9', port: 6443, interfaceName: iface }))
    .map((d) => d.toJSON())
    .map((o) => {
      if (o.kind !== 'DaemonSet') return o;
      const c = o.spec.template.spec.containers[0];
      c.env = c.env.map((e: any) => (e.name === 'KUBERNETES_SERVICE_HOST' ? { ...e, value: IP } : e));
      return o;
    })
    .map((o) => stringify(o))
    .join('---\n');
}

const cilium = (values: Record<string, unknown>) =>
  renderHelmChart({
    releaseName: 'cilium',
    namespace: 'kube-system',
    chartTgz: readFileSync(CHART),
    values: { kubeProxyReplacement: true, updateStrategy: { rollingUpdate: { maxUnavailable: 1 } }, ...values },
    version: '1.19.5',
  });

beforeAll(async () => {
  for (const tool of ['etcd', 'openssl']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is needed (Debian: etcd-server, openssl)`);
  }
  root = mkdtempSync(join(tmpdir(), 'twin-addons-'));
  addonRoot = join(root, 'host');
  bin = await buildTwin(join(root, 'bin'));
  const dir = join(root, 's1');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.yaml'), 'cluster-init: true\n');
  s = startLocal(bin, 's1', IP, dir, [], { env: { K3S_TWIN_ADDON_ROOT: addonRoot } });
  await waitFor('server up', () => s.output().includes('k3s is up and running'), 60_000, s.output);
  manifests = join(dir, 'data', 'server', 'manifests');
  mkdirSync(manifests, { recursive: true });
}, 90_000);

afterAll(async () => {
  await s?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
}, 30_000);

describe('add-on twins in a local k3s twin', () => {
  it('kube-vip: a pod for the server, the lease held by it, the VIP added, its log through pods/<name>/log', async () => {
    writeFileSync(join(manifests, 'kube-vip.yaml'), kubeVip());
    await waitFor(
      'the VIP',
      () => existsSync(join(addonRoot, 'vip-addresses')) && readFileSync(join(addonRoot, 'vip-addresses'), 'utf8').includes('eth0 127.33.0.9/32'),
      30_000,
      s.output,
    );
    const [pod] = await pods('app.kubernetes.io/name=kube-vip-ds');
    expect(pod.metadata.name).toMatch(/^kube-vip-ds-\w{5}$/);
    expect(pod.spec.nodeName).toBe('s1');
    const lease = await json('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock');
    expect(lease.spec.holderIdentity).toBe('s1');
    await waitFor('the log flushed', async () => (await podLog(pod.metadata.name)).includes('[ARP manager]'), 10_000);
    const log = await podLog(pod.metadata.name);
    expect(log).toContain('successfully acquired lease kube-system/plndr-cp-lock');
    expect(log).toContain('[ARP manager] starting ARP/NDP advertisement');
    expect((await api(`/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/log?tailLines=1`)).body.trim().split('\n')).toHaveLength(1);
    expect((await api('/api/v1/namespaces/kube-system/pods/nope/log')).status).toBe(404);
  }, 60_000);

  it("kube-vip with an interface that does not exist: upstream's line, CrashLoopBackOff, the VIP released", async () => {
    writeFileSync(join(manifests, 'kube-vip.yaml'), kubeVip('eth9'));
    const pod = await waitFor(
      'the new pod crashing',
      async () => {
        const [p] = await pods('app.kubernetes.io/name=kube-vip-ds');
        return p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff';
      },
      30_000,
      s.output,
    ).then(async () => (await pods('app.kubernetes.io/name=kube-vip-ds'))[0]);
    await waitFor('the line in the log', async () => (await podLog(pod.metadata.name)).includes('Link not found'), 10_000);
    expect(matchKubeVipLog(await podLog(pod.metadata.name), '10.43.0.1')?.causeId).toBe('VIP_INTERFACE_INVALID');
    expect(readFileSync(join(addonRoot, 'vip-addresses'), 'utf8')).not.toContain('127.33.0.9');
  }, 60_000);

  it('Cilium with k8sServiceHost "": release v1, no KUBERNETES_SERVICE_HOST; the config init container dials 10.43.0.1 first, the pod initializing, not Ready', async () => {
    writeFileSync(join(manifests, 'cilium.yaml'), cilium({ k8sServiceHost: '' }));
    await waitFor(
      'release v1',
      async () => (await api('/api/v1/namespaces/kube-system/secrets/sh.helm.release.v1.cilium.v1')).status === 200,
      30_000,
      s.output,
    );
    const ds = await json('/apis/apps/v1/namespaces/kube-system/daemonsets/cilium');
    expect(ds.spec.template.spec.containers[0].env.map((e: any) => e.name)).not.toContain('KUBERNETES_SERVICE_HOST');
    expect(ds.spec.template.spec.initContainers.map((c: any) => c.name)).toEqual([
      'config',
      'mount-cgroup',
      'apply-sysctl-overwrites',
      'mount-bpf-fs',
      'clean-cilium-state',
      'install-cni-binaries',
    ]);
    const job = await json('/apis/batch/v1/namespaces/kube-system/jobs/helm-install-cilium');
    expect(job.status.succeeded).toBe(1);
    // Cilium's k8s client tries for a minute before it logs the i/o timeout (the lab test waits for it).
    await waitFor(
      'config dialling the ClusterIP',
      async () => {
        const [p] = await pods('k8s-app=cilium');
        return (
          Boolean(p) &&
          (await api(`/api/v1/namespaces/kube-system/pods/${p.metadata.name}/log?container=config`)).body.includes(
            'msg="Establishing connection to apiserver" subsys=cilium-dbg module=k8s-client ipAddr=https://10.43.0.1:443',
          )
        );
      },
      30_000,
      s.output,
    );
    const [p] = await pods('k8s-app=cilium');
    expect(p.status.phase).toBe('Pending');
    expect(p.status.initContainerStatuses.map((c: any) => Object.keys(c.state)[0])).toEqual(['running', 'waiting', 'waiting', 'waiting', 'waiting', 'waiting']);
    expect(p.status.containerStatuses[0].state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(p.status.conditions.find((c: any) => c.type === 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [config mount-cgroup apply-sysctl-overwrites mount-bpf-fs clean-cilium-state install-cni-binaries]',
    });
    // No container named: the pod's only container, which has not started (kubelet's words, a 400).
    const agent = await api(`/api/v1/namespaces/kube-system/pods/${p.metadata.name}/log`);
    expect(agent.status).toBe(400);
    expect(JSON.parse(agent.body).message).toBe(`container "cilium-agent" in pod "${p.metadata.name}" is waiting to start: PodInitializing`);
    expect(ready(p)).toBe(false);
    expect(existsSync(join(addonRoot, 'etc/cni/net.d/05-cilium.conflist'))).toBe(false);
  }, 60_000);

  it('Cilium with k8sServiceHost = a reachable API: release v2, the agent Ready, CNI config and status socket', async () => {
    writeFileSync(join(manifests, 'cilium.yaml'), cilium({ k8sServiceHost: IP, k8sServicePort: 6443 }));
    await waitFor(
      'a Ready agent with the new env',
      async () => {
        const [p] = await pods('k8s-app=cilium');
        return Boolean(p) && ready(p) && p.spec.containers[0].env.some((e: any) => e.name === 'KUBERNETES_SERVICE_HOST' && e.value === IP);
      },
      60_000,
      s.output,
    );
    const v1 = await json('/api/v1/namespaces/kube-system/secrets/sh.helm.release.v1.cilium.v1');
    const v2 = await json('/api/v1/namespaces/kube-system/secrets/sh.helm.release.v1.cilium.v2');
    expect([v1.metadata.labels.status, v2.metadata.labels.status]).toEqual(['superseded', 'deployed']);
    expect(readFileSync(join(addonRoot, 'etc/cni/net.d/05-cilium.conflist'), 'utf8')).toContain('cilium-cni');
    const status = await new Promise<any>((resolve, reject) => {
      http
        .get({ socketPath: join(addonRoot, 'var/run/cilium/cilium.sock'), path: '/v1/healthz' }, (res) => {
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve(JSON.parse(b)));
        })
        .on('error', reject);
    });
    expect(status['kube-proxy-replacement'].mode).toBe('True');
    await waitFor('DaemonSet status', async () => (await json('/apis/apps/v1/namespaces/kube-system/daemonsets/cilium')).status?.numberReady === 1, 10_000);
  }, 90_000);
  it('an agent joins: the servers bind a Cilium pod to it, its kubelet runs it through the API (the servers the supervisor lists, its --server the fallback), its Node turns Ready, the logs of its pods come through the API from that kubelet; :10250 answers 401 without a client certificate', async () => {
    const AGENT_IP = '127.33.0.2';
    const dir = mkdtempSync(join(root, 'agent-'));
    const agentRoot = join(dir, 'host');
    let out = '';
    const p = spawn(
      bin,
      [
        'agent',
        '--server',
        `https://${IP}:6443`,
        '--token',
        s.token(),
        '--node-name',
        'a1',
        '--node-ip',
        AGENT_IP,
        '--data-dir',
        join(dir, 'data'),
        '--config',
        join(dir, 'none.yaml'),
      ],
      {
        env: {
          ...process.env,
          NOTIFY_SOCKET: '',
          K3S_TWIN_HEARTBEAT_MS: '1000',
          K3S_TWIN_NODE_PASSWORD_FILE: join(dir, 'node-password'),
          K3S_TWIN_ADDON_ROOT: agentRoot,
          K3S_TWIN_KUBELET_ADDRESS: AGENT_IP,
        },
      },
    );
    p.stderr.on('data', (c) => (out += c));
    try {
      await waitFor(
        'a Ready Cilium pod on a1',
        async () => (await pods('k8s-app=cilium')).some((x) => x.spec.nodeName === 'a1' && ready(x)),
        60_000,
        () => out + s.output(),
      );
      await waitFor(
        'node a1 Ready',
        async () => (await json('/api/v1/nodes/a1')).status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True'),
        20_000,
        () => out,
      );
      expect(readFileSync(join(agentRoot, 'etc/cni/net.d/05-cilium.conflist'), 'utf8')).toContain('cilium-cni');
      // kube-vip's affinity wants the control plane: no kube-vip pod on the agent.
      const vips = await pods('app.kubernetes.io/name=kube-vip-ds');
      expect(vips.map((x) => x.spec.nodeName)).toEqual(['s1']);
      await waitFor(
        'DaemonSet status counts the agent',
        async () => (await json('/apis/apps/v1/namespaces/kube-system/daemonsets/cilium')).status?.numberReady === 2,
        10_000,
      );
      const anonymous = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        https
          .get(`https://${AGENT_IP}:10250/pods`, { rejectUnauthorized: false }, (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
      expect(anonymous).toEqual({ status: 401, body: 'Unauthorized' });
      expect(readFileSync(join(dir, 'data', 'agent', 'client-kubelet.crt'), 'utf8')).toContain('BEGIN CERTIFICATE');
      // The agent's client load balancer: its --server as the default, then the servers the supervisor lists.
      expect(out).toContain(`msg="Updated load balancer k3s-agent-load-balancer default server: ${IP}:6443"`);
      expect(out).toContain(`msg="Got apiserver addresses from supervisor: [${IP}:6443]"`);
      expect(out).toContain(`msg="Updated load balancer k3s-agent-load-balancer server addresses -> [${IP}:6443] [default: ${IP}:6443]"`);
      // The log of a pod on the agent lives on the agent: the API asks its kubelet (the newest run, tailLines).
      const pod = (await pods('k8s-app=cilium')).find((x) => x.spec.nodeName === 'a1');
      const config = await api(`/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/log?container=config`);
      expect(config.status).toBe(200);
      expect(config.body).toContain(`msg="Establishing connection to apiserver" subsys=cilium-dbg module=k8s-client ipAddr=https://${IP}:6443`);
      expect(config.body).toContain('msg="Connected to apiserver" subsys=cilium-dbg module=k8s-client');
      expect((await api(`/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/log?container=config&tailLines=1`)).body.trim().split('\n')).toHaveLength(1);
      expect((await api(`/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/log`)).body).toContain('msg="Daemon initialization completed"');
    } finally {
      p.kill('SIGTERM');
    }
  }, 90_000);

  it('pods print the columns kube-apiserver prints (-o wide adds IP, NODE, NOMINATED NODE, READINESS GATES)', async () => {
    const t = await new Promise<any>((resolve, reject) => {
      const kc = YAML.parse(readFileSync(join(root, 's1', 'k3s.yaml'), 'utf8'));
      const b = (x: string) => Buffer.from(x, 'base64');
      https
        .get(
          `https://${IP}:6443/api/v1/namespaces/kube-system/pods`,
          {
            headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
            ca: b(kc.clusters[0].cluster['certificate-authority-data']),
            cert: b(kc.users[0].user['client-certificate-data']),
            key: b(kc.users[0].user['client-key-data']),
          },
          (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () => resolve(JSON.parse(body)));
          },
        )
        .on('error', reject);
    });
    expect(t.columnDefinitions.map((c: any) => `${c.name}/${c.priority}`)).toEqual([
      'Name/0',
      'Ready/0',
      'Status/0',
      'Restarts/0',
      'Age/0',
      'IP/1',
      'Node/1',
      'Nominated Node/1',
      'Readiness Gates/1',
    ]);
    const row = t.rows.find((r: any) => String(r.cells[0]).startsWith('cilium-') && r.cells[6] === 's1');
    expect(row.cells).toEqual([expect.stringMatching(/^cilium-\w{5}$/), '1/1', 'Running', expect.anything(), expect.any(String), IP, 's1', '<none>', '<none>']);
  });
});
