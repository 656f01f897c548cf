// The kube-vip twin in the lab: a real 3-server cluster built by the engine (--until k3s-join), then the
// manifest the engine renders put into every server's auto-deploy folder, as the kube-vip phase does.
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fault, hostExec } from '../../lab/api.ts';
import { imagePullCause } from '../../src/images/pull-cause.ts';
import { renderKubeVip } from '../../phases/kube-vip/render.ts';
import { matchKubeVipLog } from '../../phases/kube-vip/log-causes.ts';
import {
  cleanAddonTraces,
  clusterCA,
  kubectl,
  kubectlJson,
  removeManifest,
  tlsHandshake,
  VIP,
  vipHolders,
  waitUntil,
  writeManifest,
} from '../../lab/twin/addons/lab-support.ts';
import { LAB_SERVICE_CIDR } from '../../lab/inventory.ts';
import { serviceAddresses } from '../../src/inventory/service-addresses.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, holdLab } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster } from '../support/cluster.ts';

const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
const S1 = SERVERS[0];
/** The lab's service network is not k3s's default: the deadlock names the ClusterIP derived from it (10.45.0.1). */
const CLUSTER_IP = serviceAddresses(LAB_SERVICE_CIDR).kubernetes;
let ca = '';

const manifest = (edit: (docs: any[]) => any[] = (d) => d) => {
  const docs = parseAllDocuments(renderKubeVip({ vip: VIP, port: 6443, interfaceName: 'eth0' })).map((d) => d.toJSON());
  return edit(docs)
    .map((d) => stringify(d))
    .join('---\n');
};
const withoutLeaseCreate = (docs: any[]) =>
  docs.map((d) =>
    d.kind === 'ClusterRole'
      ? { ...d, rules: d.rules.map((r: any) => (r.resources.includes('leases') ? { ...r, verbs: r.verbs.filter((v: string) => v !== 'create') } : r)) }
      : d,
  );
const dsEnv = (docs: any[], f: (env: any[]) => any[]) =>
  docs.map((d) =>
    d.kind === 'DaemonSet'
      ? {
          ...d,
          spec: {
            ...d.spec,
            template: {
              ...d.spec.template,
              spec: { ...d.spec.template.spec, containers: [{ ...d.spec.template.spec.containers[0], env: f(d.spec.template.spec.containers[0].env) }] },
            },
          },
        }
      : d,
  );

async function deploy(text: string): Promise<void> {
  for (const h of SERVERS) await writeManifest(h, 'kube-vip.yaml', text);
}

async function kubeVipPods(from = S1): Promise<any[]> {
  return (await kubectlJson(from, 'get pods -n kube-system -l app.kubernetes.io/name=kube-vip-ds')).items;
}

async function holder(from = S1): Promise<string> {
  return (await kubectl(from, "get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'", true)).trim();
}

/** Back to "no kube-vip ever deployed": no manifest, objects deleted, no lease, no VIP on any NIC. */
async function removeKubeVip(): Promise<void> {
  // The manifest goes first: a server whose deployer is still retrying the last one (an apply that met another
  // server's write) would otherwise create the ClusterRole again after it is deleted here.
  for (const h of SERVERS) await removeManifest(h, 'kube-vip.yaml');
  const deleteRbac = async () => {
    await kubectl(S1, 'delete clusterrolebinding system:kube-vip-binding --ignore-not-found');
    await kubectl(S1, 'delete clusterrole system:kube-vip-role --ignore-not-found');
  };
  await kubectl(S1, 'delete ds -n kube-system kube-vip-ds --ignore-not-found');
  await deleteRbac();
  await waitUntil('kube-vip pods gone', async () => (await kubeVipPods()).length === 0, 60_000);
  // Only now: a leader still running would create the lease again (client-go creates a lease it cannot find),
  // and an apply in flight when the manifest went has ended.
  await kubectl(S1, 'delete lease -n kube-system plndr-cp-lock --ignore-not-found');
  await deleteRbac();
  const left = await kubectl(
    S1,
    'get -n kube-system clusterrole/system:kube-vip-role clusterrolebinding/system:kube-vip-binding ds/kube-vip-ds --ignore-not-found -o name',
  );
  expect(left.trim()).toBe('');
  await cleanAddonTraces(SERVERS);
}

/** Every kube-vip pod's log (through the API, as kubectl logs reads it). */
async function logs(): Promise<string[]> {
  const pods = await kubeVipPods();
  return Promise.all(pods.map((p) => kubectl(S1, `logs -n kube-system ${p.metadata.name}`, true)));
}

describeAsRoot('kube-vip twin', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    await cleanAddonTraces(SERVERS);
    const r = await bootstrap(['--until', 'k3s-join'], { stateDir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    ca = await clusterCA(S1);
  });

  afterAll(async () => {
    await cleanAddonTraces(SERVERS).catch(() => undefined);
    await resetCluster();
  });

  it("the engine's manifest: one pod per server, a leader on plndr-cp-lock, the VIP answers TLS with the cluster CA", async () => {
    // The twin took the service network from k3s's config, as kube-apiserver does for Service `kubernetes`.
    expect((await kubectl(S1, "get svc kubernetes -n default -o jsonpath='{.spec.clusterIP}'")).trim()).toBe(CLUSTER_IP);
    await deploy(manifest());
    const answered = await waitUntil('the VIP answering', async () => (await tlsHandshake(VIP, 6443, ca)).ok, 60_000);
    expect(answered).toBe(true);
    // Each server's twin creates its own pod on its next tick.
    const pods = await waitUntil(
      'a kube-vip pod on every server',
      async () => {
        const p = await kubeVipPods();
        return p.length === 3 ? p : undefined;
      },
      20_000,
    );
    expect(pods.map((p) => p.spec.nodeName).sort()).toEqual(SERVERS);
    for (const p of pods) expect(p.metadata.name).toMatch(/^kube-vip-ds-[a-z0-9]{5}$/);
    const lead = await holder();
    expect(SERVERS).toContain(lead);
    expect(await vipHolders(SERVERS)).toEqual([lead]);
    const leaderPod = pods.find((p) => p.spec.nodeName === lead);
    // The leader may hold the VIP a moment before the kubelet reports its container started; until then
    // the API answers `kubectl logs` with "is waiting to start: ContainerCreating", as it does upstream.
    const log = await waitUntil(
      "the leader pod's log",
      async () => {
        const l = await kubectl(S1, `logs -n kube-system ${leaderPod.metadata.name}`, true);
        return l.includes('successfully acquired lease') ? l : undefined;
      },
      20_000,
    );
    expect(log).toContain('successfully acquired lease kube-system/plndr-cp-lock');
    expect(log).toContain('[ARP manager] starting ARP/NDP advertisement');
    const lease = await kubectlJson(S1, 'get lease -n kube-system plndr-cp-lock');
    expect(lease.spec).toMatchObject({ holderIdentity: lead, leaseDurationSeconds: 15 });
    // The DaemonSet reports itself rolled out.
    const ds = await waitUntil(
      'the DaemonSet rolled out',
      async () => {
        const d = await kubectlJson(S1, 'get ds -n kube-system kube-vip-ds');
        return d.status?.numberReady === 3 ? d : undefined;
      },
      20_000,
    );
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, observedGeneration: ds.metadata.generation });
  });

  it('stopping the lease holder moves the lease and the VIP to another server within the lease timing', async () => {
    const lead = await holder();
    const release = await holdLab();
    try {
      await fault(lead, 'stop');
      const t0 = Date.now();
      const others = SERVERS.filter((s) => s !== lead);
      const next = await waitUntil(
        'a new holder',
        async () => {
          const h = await holder(others[0]);
          return h && h !== lead ? h : undefined;
        },
        60_000,
      );
      await waitUntil('the VIP answering again', async () => (await tlsHandshake(VIP, 6443, ca)).ok, 30_000, 500);
      const took = Date.now() - t0;
      // Lease 15 s (observed by the follower from its last renewal seen), retry 2 s: about 15–19 s.
      expect(took).toBeLessThan(30_000);
      expect(others).toContain(next);
      expect(await vipHolders(others)).toEqual([next]);
    } finally {
      await fault(lead, 'start');
      release();
    }
    // Back up, the old holder runs kube-vip as a follower: the VIP is on one host only.
    await waitUntil(
      'three kube-vip pods running again',
      async () => (await kubeVipPods()).filter((p) => p.status?.containerStatuses?.[0]?.ready).length === 3,
      90_000,
      2000,
    );
    expect((await vipHolders(SERVERS)).length).toBe(1);
  });

  it.each([
    [
      'an interface that does not exist',
      'VIP_INTERFACE_INVALID',
      'eth9 is not valid interface, reason: get eth9 failed, error: Link not found',
      (d: any[]) => dsEnv(d, (env) => env.map((e) => (e.name === 'vip_interface' ? { ...e, value: 'eth9' } : e))),
    ],
    [
      'no ClusterRole/ClusterRoleBinding',
      'KUBE_VIP_RBAC_MISSING',
      'leases.coordination.k8s.io "plndr-cp-lock" is forbidden',
      (d: any[]) => d.filter((o) => o.kind !== 'ClusterRole' && o.kind !== 'ClusterRoleBinding'),
    ],
    // The ClusterRole lets kube-vip read its lease but not create it: the apiserver's refusal of a create names
    // no object, and client-go logs it as the create it was.
    [
      'a ClusterRole without create on leases',
      'KUBE_VIP_RBAC_MISSING',
      'leaderelection.go:440] error initially creating leader election record: leases.coordination.k8s.io is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
      withoutLeaseCreate,
    ],
    [
      'no KUBERNETES_SERVICE_HOST/PORT',
      'KUBE_VIP_SERVICE_HOST_DEADLOCK',
      `error retrieving resource lock kube-system/plndr-cp-lock: Get "https://${CLUSTER_IP}:443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock?timeout=10s": dial tcp ${CLUSTER_IP}:443: i/o timeout`,
      (d: any[]) => dsEnv(d, (env) => env.filter((e) => !e.name.startsWith('KUBERNETES_SERVICE_'))),
    ],
  ])("%s: upstream's log line, the engine names %s, no VIP", async (_what, cause, line, edit) => {
    await removeKubeVip();
    await deploy(manifest(edit));
    // The budget is the pods' start on a loaded machine (CI runs two labs) plus the twin's 10 s dial timeout;
    // when it ends, the error says what each pod had logged last.
    const all = await waitUntil(
      `"${line}" in the kube-vip logs`,
      async () => {
        const l = await logs();
        if (l.length === 3 && l.every((x) => x.includes(line))) return l;
        throw new Error(`${l.length} pod(s); their last lines: ${l.map((x) => x.trim().split('\n').pop() ?? '(none)').join(' | ')}`);
      },
      120_000,
      2000,
    );
    for (const l of all) expect(matchKubeVipLog(l, CLUSTER_IP)?.causeId).toBe(cause);
    expect(await vipHolders(SERVERS)).toEqual([]);
    expect((await tlsHandshake(VIP, 6443, ca, 2000)).ok).toBe(false);
    expect(await holder()).toBe('');
  });

  it("an image no archive brought (the lab hosts reach no registry): every pod Pending in ImagePullBackOff as the kubelet words it, the engine's reading names IMAGE_NOT_AVAILABLE with image and node, no VIP", async () => {
    const image = 'ghcr.io/kube-vip/kube-vip:v0.9.3';
    const withImage = (d: any[]) =>
      d.map((o) =>
        o.kind === 'DaemonSet'
          ? {
              ...o,
              spec: {
                ...o.spec,
                template: { ...o.spec.template, spec: { ...o.spec.template.spec, containers: [{ ...o.spec.template.spec.containers[0], image }] } },
              },
            }
          : o,
      );
    await removeKubeVip();
    await deploy(manifest(withImage));
    const pods = await waitUntil(
      'every kube-vip pod backing off its pull',
      async () => {
        const p = await kubeVipPods();
        return p.length === 3 && p.every((x) => x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff') ? p : undefined;
      },
      30_000,
      1000,
    );
    for (const p of pods) {
      expect(p.status.phase).toBe('Pending');
      expect(p.status.containerStatuses[0].state.waiting.message).toBe(`Back-off pulling image "${image}"`);
    }
    const r = imagePullCause(pods, true)!;
    expect(r.decided).toBe(true);
    expect(SERVERS).toContain(r.cause.host);
    expect(r.cause.message).toBe(`${image} is not on ${r.cause.host} and cannot be pulled: add an archive holding it to k3s.imageArchives`);
    expect(await vipHolders(SERVERS)).toEqual([]);
    // What each server's k3s imported at start: the lab's archive with the engine's own image.
    const journal = await hostExec(S1, 'journalctl -u k3s --no-pager -o cat | grep -F "Imported ghcr.io/kube-vip/kube-vip:v0.9.2" | tail -n1');
    expect(journal.stdout).toContain('msg="Imported ghcr.io/kube-vip/kube-vip:v0.9.2"');
  });
});
