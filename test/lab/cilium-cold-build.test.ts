// The second half of a cold build in the lab: kube-vip announces the VIP and the gate waits until it
// answers; Cilium (the HelmChart from the GitOps HelmRelease's values) dials the VIP. The 2026-09-01
// deadlock cannot happen: the order is the DAG's, and an unresolved K3S_API_HOST stops before any change.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { fault, hostExec } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { NET } from '../../lab/config.ts';
import { LAB_CLUSTER_CIDR } from '../../lab/inventory.ts';
import { bootstrap, freshStateDir, hostFingerprint, resetCluster, stopOf, stopsOf } from '../support/cluster.ts';
import { dockerSaveArchive, labCiliumImages } from '../../lab/image-archives.ts';
import { editFile, labInventory } from '../support/lab-inventory.ts';
import { hostHttp } from '../support/host-http.ts';

// The lab's hosts as `lab up` made them (servers, then agents; the shared lab has one agent).
const all = () => hosts().map((h) => h.name);
const servers = () =>
  hosts()
    .filter((h) => h.role === 'server')
    .map((h) => h.name);
const agents = () =>
  hosts()
    .filter((h) => h.role === 'agent')
    .map((h) => h.name);
const helmRelease = (checkout: string) => join(checkout, 'platform', 'cilium', 'helmrelease.yaml');

describeAsRoot('cold build through Cilium', () => {
  const stateDir = freshStateDir();
  let inventory: string;

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    inventory = labInventory();
  });

  it('an overlay without K3S_API_HOST stops with UNRESOLVED_SUBSTITUTION before any change to a host', async () => {
    const before = await Promise.all(all().map(hostFingerprint));
    const broken = labInventory({ clusterPath: 'broken/undefined' });
    const r = await bootstrap(['--until', 'cilium', '--json'], { stateDir: freshStateDir(), inventory: broken });
    expect(stopOf(r)).toMatchObject({ cause: 'UNRESOLVED_SUBSTITUTION' });
    expect(JSON.stringify(stopOf(r))).toContain('K3S_API_HOST');
    expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
    expect(await Promise.all(all().map(hostFingerprint))).toEqual(before);
  });

  it('builds from cold: the VIP answers before Cilium installs, agents dial the VIP, nodes Ready', async () => {
    const r = await bootstrap(['--until', 'cilium', '--json'], { stateDir, inventory });
    expect(stopOf(r), JSON.stringify(stopOf(r))).toBeUndefined();
    expect(r.code).toBe(0);
    const vipOk = r.events.findIndex((e) => e.type === 'gate-end' && e.gate === 'vip-answers' && e.status === 'ok');
    const ciliumStart = r.events.findIndex((e) => e.type === 'phase-start' && e.phase === 'cilium');
    expect(vipOk).toBeGreaterThan(-1);
    expect(vipOk).toBeLessThan(ciliumStart);
    const env = await hostExec(
      'k3s-lab-1',
      `k3s kubectl get pods -n kube-system -l k8s-app=cilium -o jsonpath='{range .items[*]}{.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_HOST")].value}{"\\n"}{end}'`,
    );
    expect(env.stdout.trim().split('\n')).toEqual(all().map(() => NET.vip));
    const ready = await hostExec(
      'k3s-lab-1',
      `k3s kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'`,
    );
    expect(ready.stdout.trim().split('\n').sort()).toEqual(
      all()
        .map((n) => `${n}=True`)
        .sort(),
    );
    // The agent runs its own Cilium pod (and no kube-vip: its affinity wants the control plane), and its
    // kubelet port belongs to k3s-agent, as the engine's port probe sees it.
    const wide = await hostExec('k3s-lab-1', 'k3s kubectl get pods -n kube-system -o wide');
    expect(wide.stdout.split('\n')[0]).toMatch(/^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES$/);
    for (const a of agents()) {
      expect(wide.stdout).toMatch(new RegExp(`^cilium-\\w{5} +1/1 +Running +\\d+ +\\S+ +[\\d.]+ +${a} `, 'm'));
      expect(wide.stdout).not.toMatch(new RegExp(`^kube-vip\\S* .* ${a} `, 'm'));
      const port = await hostExec(
        a,
        "ss -Hltnp 'sport = :10250' | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 | xargs -I{} grep -o '[^/]*\\.service' /proc/{}/cgroup | head -n1",
      );
      expect(port.stdout.trim()).toBe('k3s-agent.service');
    }
  });

  it('a second run changes nothing, and --check after it would change nothing', async () => {
    const again = await bootstrap(['--until', 'cilium'], { stateDir, inventory });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^\d+ ok, 0 changed/m);
    const check = await bootstrap(['--until', 'cilium', '--check'], { stateDir, inventory });
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/^\d+ ok, 0 would change/m);
  });

  // Air-gapped images (the lab hosts reach no registry; `lab up` wrote OCI archives of every add-on image).
  it("Cilium's images only in a docker save archive (tags, no registry digest) → IMAGE_NOT_IN_ARCHIVES for each, before any change", async () => {
    const pinned = labCiliumImages();
    expect(pinned).toHaveLength(6); // agent, operator-generic, envoy, Hubble relay, UI, UI backend
    for (const i of pinned) expect(i).toMatch(/^quay\.io\/cilium\/[a-z-]+:v[\w.-]+@sha256:[0-9a-f]{64}$/);
    const saved = join(mkdtempSync(join(tmpdir(), 'lab-saved-')), 'cilium-images.tar');
    writeFileSync(saved, dockerSaveArchive(pinned.map((i) => i.replace(/@sha256:.*$/, ''))));
    const variant = labInventory({
      inventory: (inv) => (inv.k3s.imageArchives = inv.k3s.imageArchives.map((a: any) => (a.file.endsWith('/cilium-images.tar') ? { file: saved } : a))),
    });
    const t0 = Date.now();
    const r = await bootstrap(['--until', 'cilium', '--json'], { stateDir, inventory: variant });
    const stops = stopsOf(r);
    expect(stops.map((c) => c.cause)).toEqual(pinned.map(() => 'IMAGE_NOT_IN_ARCHIVES'));
    expect(stops[0].message).toBe(
      `Cilium agent pulls ${pinned[0]}; cilium-images.tar has ${pinned[0].replace(/@.*$/, '')} as a docker save archive, which keeps tags only: containerd gives the imported image a digest of its own, so the pinned digest is found nowhere`,
    );
    expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(60_000);
  });

  it('a node without the Cilium image → IMAGE_NOT_AVAILABLE naming image and node at once; the next run places the archive and the agent starts', async () => {
    const agent = agents()[0];
    const image = labCiliumImages()[0];
    // A node that never got the archive: the twin's store is read from agent/images at start (real
    // containerd would keep an image it once imported), so the archive goes and k3s-agent restarts.
    await hostExec(agent, 'rm -f /var/lib/rancher/k3s/agent/images/cilium-images.tar && systemctl restart k3s-agent');
    const pulling = async () =>
      (
        await hostExec(
          'k3s-lab-1',
          `k3s kubectl get pods -n kube-system -l k8s-app=cilium --field-selector spec.nodeName=${agent} -o jsonpath='{.items[0].status.containerStatuses[0].state.waiting.reason}'`,
        )
      ).stdout.trim();
    for (let i = 0; i < 30 && !/ImagePull/.test(await pulling()); i++) await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    const r = await bootstrap(['--only', 'cilium', '--json'], { stateDir, inventory });
    const stop = stopOf(r);
    expect(stop).toMatchObject({
      cause: 'IMAGE_NOT_AVAILABLE',
      host: agent,
      message: `${image} is not on ${agent} and cannot be pulled: add an OCI archive holding it (the reference pins a digest; a docker save archive keeps tags only) to k3s.imageArchives`,
    });
    expect(stop.evidence.seen).toMatch(
      new RegExp(
        `^pod kube-system/cilium-\\w{5} on ${agent}: container cilium-agent waiting (ErrImagePull: rpc error: code = Unknown desc = failed to pull and unpack image|ImagePullBackOff: Back-off pulling image) "`,
      ),
    );
    expect(stop.evidence.seen).toContain(`"${image}"`);
    expect(Date.now() - t0).toBeLessThan(30_000);
    // The engine puts the archive back (by sha256), k3s imports it within seconds, the kubelet's next pull finds it.
    const healed = await bootstrap(['--until', 'cilium', '--json'], { stateDir, inventory });
    expect(stopOf(healed), JSON.stringify(stopOf(healed))).toBeUndefined();
    // On the running cluster the rolling change's step places it (no restart: images only), before the install phases.
    const uploads = healed.events.filter((e) => e.type === 'step-end' && e.status === 'changed').map((e) => `${e.phase} ${e.host} ${e.step}`);
    expect(uploads).toEqual([`rolling-agents ${agent} rolling`]);
    const placed = healed.events.find((e) => e.type === 'step-end' && e.phase === 'rolling-agents' && e.host === agent);
    expect(placed.changes.map((c: any) => c.summary)).toEqual([
      expect.stringMatching(/^upload .*cilium-images\.tar → \/var\/lib\/rancher\/k3s\/agent\/images\/cilium-images\.tar/),
    ]);
    const journal = await hostExec(agent, 'journalctl -u k3s-agent --no-pager -o cat | grep -F "Imported quay.io/cilium/cilium:v1.19.5" | tail -n1');
    expect(journal.stdout).toContain('msg="Imported quay.io/cilium/cilium:v1.19.5"');
  });

  it.each([
    ['maxUnavailable 2', 'ROLLOUT_TOO_WIDE', (c: string) => editFile(helmRelease(c), /maxUnavailable: 1/, 'maxUnavailable: 2')],
    [
      'a pod CIDR that is not the cluster CIDR',
      'POD_CIDR_MISMATCH',
      (c: string) => editFile(helmRelease(c), `clusterPoolIPv4PodCIDRList: ["${LAB_CLUSTER_CIDR}"]`, 'clusterPoolIPv4PodCIDRList: ["10.0.0.0/8"]'),
    ],
    [
      'k8sServiceHost = a node address',
      'SERVICE_HOST_NOT_VIP',
      (c: string) => editFile(helmRelease(c), /k8sServiceHost: "\$\{K3S_API_HOST\}"/, `k8sServiceHost: "${hosts()[0].address}"`),
    ],
    ['kube-proxy replacement off', 'KPR_MISMATCH', (c: string) => editFile(helmRelease(c), /kubeProxyReplacement: true/, 'kubeProxyReplacement: false')],
  ])('%s → %s, before any change', async (_what, cause, edit) => {
    const variant = labInventory({ gitops: edit });
    const t0 = Date.now();
    const r = await bootstrap(['--until', 'cilium', '--json'], { stateDir, inventory: variant });
    expect(stopOf(r)).toMatchObject({ cause });
    expect(r.events.filter((e) => e.type === 'step-end' && e.status === 'changed')).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(60_000);
  });

  it('servers whose VIP NICs differ → VIP_INTERFACE_INVALID naming them', async () => {
    await fault('k3s-lab-2', 'rename-nic', 'lan0');
    try {
      const r = await bootstrap(['--only', 'kube-vip', '--json'], { stateDir, inventory });
      const stop = stopOf(r);
      expect(stop).toMatchObject({ cause: 'VIP_INTERFACE_INVALID' });
      expect(JSON.stringify(stop)).toContain('lan0');
    } finally {
      await fault('k3s-lab-2', 'rename-nic', 'eth0');
    }
  });

  it('VIP failover: stopping the lease holder moves the VIP to another server within the lease timing', async () => {
    const holder = (await hostExec('k3s-lab-1', "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
    expect(servers()).toContain(holder);
    const other = servers().find((s) => s !== holder)!;
    await fault(holder, 'stop');
    try {
      const t0 = Date.now();
      let answered = false;
      while (Date.now() - t0 < 45_000 && !answered) {
        const r = await hostExec(other, `${hostHttp(`https://${NET.vip}:6443/livez`, { insecure: true })}; true`);
        answered = /^\d{3}$/.test(r.stdout.trim()) && r.stdout.trim() !== '000';
        if (!answered) await new Promise((res) => setTimeout(res, 1000));
      }
      expect(answered).toBe(true);
      // Lease duration 15 s, renew deadline 10 s, retry 2 s: well within 45 s.
      expect(Date.now() - t0).toBeLessThan(45_000);
    } finally {
      await fault(holder, 'start');
      await ensureLab();
    }
  });
});
