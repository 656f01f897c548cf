// bootstrap <env> --replace <server> in the lab, through the commands of runbooks/replace-server.md as an
// operator types them: a running server replaced in place has everything k3s started stopped (its pods'
// containers outlive `systemctl stop k3s`, as real ones do), its old state wiped, its images tarball put back,
// and joins as a new member;
// a server stopped, reinstalled (fresh disk, new host key) and replaced comes back as an etcd voter with
// nothing lost — also when it was the founder (it joins a survivor, never cluster-init, and a later plain
// run changes nothing on it). With two of three servers down the replace is refused with QUORUM_AT_RISK
// before anything changes. One cluster for the whole file.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fault, hostExec, wipe } from '../../lab/api.ts';
import { OPS_USER, paths } from '../../lab/config.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, hostFingerprint, resetCluster, voters } from '../support/cluster.ts';
import { labInventory } from '../support/lab-inventory.ts';
import { labBlock, runBlock } from '../support/runbook-blocks.ts';
import { repoRoot } from '../support/cli.ts';
import { validatedOrder, allPhases } from '../../phases/index.ts';
import { lastBuiltPhase } from '../../modes/compose.ts';

const RUNBOOK = readFileSync(`${repoRoot}/runbooks/replace-server.md`, 'utf8');
const ALL_VOTERS = { 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' };
const LONG = 1_200_000;
/** Every built phase, as the replace itself runs them (a phase still to come is refused by a plain run). */
const BUILT = ['--until', lastBuiltPhase(validatedOrder(allPhases()))!];
/** An air-gap images tarball in the artifacts folder (the twin loads no images: its bytes only must come back). */
const IMAGES = 'k3s-airgap-images-amd64.tar';
const IMAGES_ON_HOST = `/var/lib/rancher/k3s/agent/images/${IMAGES}`;

/** The host's container processes (the pods' containerd-shims, found as k3s-killall.sh finds them): pid → cgroup. */
async function containers(host: string): Promise<Record<string, string>> {
  const r = await hostExec(
    host,
    "for p in $(ps -e -o pid= -o args= | awk '/\\/var\\/lib\\/rancher\\/k3s\\/data\\/[^\\/]*\\/bin\\/containerd-shim/ { print $1 }'); do echo \"$p $(grep -o 'kubepods.*' /proc/$p/cgroup | head -1)\"; done",
  );
  return Object.fromEntries(
    r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')),
  );
}
/** What runs in those containers: the program of each task containerd keeps under /run/k3s. */
async function programs(host: string): Promise<string[]> {
  const r = await hostExec(
    host,
    'cat /run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/*/config.json 2>/dev/null | grep -o \'"program":"[^"]*"\' | cut -d\'"\' -f4 | sort',
  );
  return r.stdout.trim().split('\n').filter(Boolean);
}
const POD_VOLUME = '/var/lib/kubelet/pods/5d2c0b1e-0000-4000-8000-00000000000a/volumes/kubernetes.io~empty-dir/cache';
const CNI_NETNS = 'cni-5d2c0b1e-0000-4000-8000-00000000000b';
const PLANT_CONTAINER_LEFTOVERS = [
  `mkdir -p ${POD_VOLUME} && mount -t tmpfs tmpfs ${POD_VOLUME}`,
  `ip netns add ${CNI_NETNS}`,
  `ip link add lxc5d2c0b1e0a type veth peer name eth0 netns ${CNI_NETNS}`,
  'ip link add cilium_host type veth peer name cilium_net',
].join(' && ');
/** Mounts under kubelet's folder and /run/k3s, CNI network namespaces, Cilium's links and lxc veths on the host. */
async function leftovers(host: string): Promise<string[]> {
  const r = await hostExec(
    host,
    'awk \'$2 ~ "^(/run/k3s|/var/lib/kubelet)" { print "mount " $2 }\' /proc/self/mounts; ip netns list | awk \'$1 ~ /^cni-/ { print "netns " $1 }\'; ip -o link show | awk -F\': \' \'$2 ~ /^(cilium_|lxc)/ { sub(/@.*/, "", $2); print "link " $2 }\'',
  );
  return r.stdout.trim().split('\n').filter(Boolean);
}
const alive = async (host: string, pids: string[]) =>
  (await hostExec(host, `for p in ${pids.join(' ')}; do [ -d /proc/$p ] && echo $p; done; true`)).stdout.trim().split('\n').filter(Boolean);

describeAsRoot('bootstrap <env> --replace <server>', () => {
  const stateDir = freshStateDir();
  let inventory: string;
  const address = (name: string) => hosts().find((h) => h.name === name)!.address;
  const block = (name: string, server: string, survivor: string) =>
    runBlock(labBlock(RUNBOOK, name), {
      env: 'lab',
      inventory,
      stateDir,
      values: { server, survivor: address(survivor), user: OPS_USER },
      ssh: { identityFile: paths.key, knownHostsFile: paths.knownHosts },
    });
  const knownHostLine = (name: string) =>
    readFileSync(paths.knownHosts, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${address(name)} `));
  /** An object in the datastore, to prove a replace loses nothing. */
  const marker = (on: string) => hostExec(on, 'k3s kubectl get configmap replace-marker -o jsonpath={.data.v}').then((r) => r.stdout.trim());
  /** Stop the host and reinstall it: fresh disk, new host key (written to the lab known_hosts). */
  const reinstall = async (name: string) => {
    const before = knownHostLine(name);
    await fault(name, 'stop');
    await wipe(name);
    expect(knownHostLine(name)).not.toBe(before);
    const k3s = await hostExec(name, 'test -e /var/lib/rancher/k3s && echo old-state || echo fresh');
    expect(k3s.stdout.trim()).toBe('fresh');
  };

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    writeFileSync(join(paths.artifacts, IMAGES), 'not a real image archive\n');
    inventory = labInventory();
    const cold = await bootstrap(BUILT, { stateDir, inventory });
    expect(cold.code, cold.stdout + cold.stderr).toBe(0);
    await hostExec('k3s-lab-1', 'k3s kubectl create configmap replace-marker --from-literal=v=kept-across-replaces');
  }, LONG);

  afterAll(() => rmSync(join(paths.artifacts, IMAGES), { force: true }));

  it(
    "the pods' containers run as their own processes in kubepods cgroups and outlive `systemctl stop k3s`; a restarted k3s adopts them",
    async () => {
      const before = await containers('k3s-lab-3');
      expect(Object.keys(before)).toHaveLength(2);
      for (const cg of Object.values(before))
        expect(cg).toMatch(/^kubepods\.slice\/kubepods-besteffort\.slice\/kubepods-besteffort-pod[0-9a-f_]+\.slice\/cri-containerd-[0-9a-f]{64}\.scope$/);
      expect(await programs('k3s-lab-3')).toEqual(['cilium-agent', 'kube-vip']);
      await hostExec('k3s-lab-3', 'systemctl stop k3s');
      try {
        expect((await hostExec('k3s-lab-3', 'systemctl is-active k3s', { allowFail: true })).stdout.trim()).toBe('inactive');
        expect(await alive('k3s-lab-3', Object.keys(before))).toEqual(Object.keys(before));
      } finally {
        await hostExec('k3s-lab-3', 'systemctl start k3s');
      }
      // Back: the same processes, no second copy, the pods Ready again.
      await expect
        .poll(
          async () => {
            const r = await hostExec(
              'k3s-lab-1',
              'k3s kubectl get pods -A --field-selector spec.nodeName=k3s-lab-3 -o jsonpath=\'{range .items[*]}{.status.containerStatuses[0].ready}{"\\n"}{end}\'',
              { allowFail: true },
            );
            return r.stdout.trim().split('\n');
          },
          { timeout: 120_000, interval: 3_000 },
        )
        .toEqual(['true', 'true']);
      expect(await containers('k3s-lab-3')).toEqual(before);
    },
    LONG,
  );

  it(
    'a running server replaced in place: its Node deleted, k3s stopped and its old state wiped, it joins again as a new member',
    async () => {
      const memberOf = (name: string) =>
        hostExec('k3s-lab-1', `k3s kubectl get node ${name} -o jsonpath='{.metadata.annotations.etcd\\.k3s\\.cattle\\.io/node-name}'`).then((r) =>
          r.stdout.trim(),
        );
      const before = await memberOf('k3s-lab-3');
      expect(before).toMatch(/^k3s-lab-3-[0-9a-f]{8}$/);
      const old = Object.keys(await containers('k3s-lab-3'));
      expect(old).toHaveLength(2);
      expect((await hostExec('k3s-lab-3', `sha256sum ${IMAGES_ON_HOST}`)).code).toBe(0);
      // What real containers leave besides their processes (the twin's make none): a pod's volume mounted
      // under kubelet's folder, a CNI network namespace with the pod's end of its lxc veth, Cilium's
      // cilium_host/cilium_net pair.
      await hostExec('k3s-lab-3', PLANT_CONTAINER_LEFTOVERS);
      // a mount, a namespace, and three links on the host's side (lxc…, cilium_host, cilium_net)
      expect(await leftovers('k3s-lab-3')).toHaveLength(5);
      const replace = await block('replace', 'k3s-lab-3', 'k3s-lab-1');
      expect(replace.code, replace.stdout + replace.stderr).toBe(0);
      expect(replace.stdout).toContain('stop k3s and everything it started as k3s-killall.sh does (2 container shims and their processes');
      expect(replace.stdout).toContain('wipe the old state: /var/lib/rancher/k3s');
      // No process of the old containers is left; the new ones are others, in kubepods cgroups again.
      expect(await alive('k3s-lab-3', old)).toEqual([]);
      expect(await leftovers('k3s-lab-3')).toEqual([]);
      expect(await voters()).toEqual(ALL_VOTERS);
      await expect.poll(async () => Object.keys(await containers('k3s-lab-3')).length, { timeout: 120_000, interval: 3_000 }).toBe(2);
      expect(await programs('k3s-lab-3')).toEqual(['cilium-agent', 'kube-vip']);
      // The images tarball the wipe deleted is back from the artifacts.
      expect((await hostExec('k3s-lab-3', `cat ${IMAGES_ON_HOST}`)).stdout).toBe('not a real image archive\n');
      const after = await memberOf('k3s-lab-3');
      expect(after).toMatch(/^k3s-lab-3-[0-9a-f]{8}$/);
      expect(after).not.toBe(before);
      expect(await marker('k3s-lab-3')).toBe('kept-across-replaces');
    },
    LONG,
  );

  it(
    'a reinstalled k3s-lab-2: the plan names the Node to delete and the join target; the replace brings back 3 voters, nothing lost',
    async () => {
      await reinstall('k3s-lab-2');
      const check = await block('check', 'k3s-lab-2', 'k3s-lab-1');
      expect(check.code, check.stdout + check.stderr).toBe(2);
      expect(check.stdout).toContain(`delete Node k3s-lab-2 through k3s-lab-1 (never forced`);
      expect(check.stdout).toContain(`k3s-lab-2 then joins https://${address('k3s-lab-1')}:6443 as a new member`);

      const replace = await block('replace', 'k3s-lab-2', 'k3s-lab-1');
      expect(replace.code, replace.stdout + replace.stderr).toBe(0);
      expect(await voters()).toEqual(ALL_VOTERS);
      expect(await marker('k3s-lab-2')).toBe('kept-across-replaces');
      const journal = await hostExec('k3s-lab-1', 'journalctl -u k3s --no-pager -o cat | grep -c "Removing name=k3s-lab-2-"');
      expect(Number(journal.stdout.trim())).toBeGreaterThan(0);

      const confirm = await block('confirm', 'k3s-lab-2', 'k3s-lab-1');
      expect(confirm.code, confirm.stdout + confirm.stderr).toBe(0);
      expect(confirm.stdout).toMatch(/^k3s-lab-2\s+True\s+True$/m);
    },
    LONG,
  );

  it(
    'the founder reinstalled: it joins a surviving server (never cluster-init), and a plain rerun changes nothing',
    async () => {
      await reinstall('k3s-lab-1');
      const check = await block('check', 'k3s-lab-1', 'k3s-lab-2');
      expect(check.code, check.stdout + check.stderr).toBe(2);
      expect(check.stdout).toContain(`k3s-lab-1 then joins https://${address('k3s-lab-2')}:6443 as a new member`);

      const replace = await block('replace', 'k3s-lab-1', 'k3s-lab-2');
      expect(replace.code, replace.stdout + replace.stderr).toBe(0);
      expect(await voters('k3s-lab-2')).toEqual(ALL_VOTERS);
      expect(await marker('k3s-lab-1')).toBe('kept-across-replaces');
      const config = await hostExec('k3s-lab-1', "grep -E '^(cluster-init|server):' /etc/rancher/k3s/config.yaml");
      expect(config.stdout.trim()).toBe(`server: https://${address('k3s-lab-2')}:6443`);

      const again = await bootstrap(BUILT, { stateDir, inventory });
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^\d+ ok, 0 changed/m);
    },
    LONG,
  );

  it(
    'two of three servers down: QUORUM_AT_RISK before anything changes, check mode too',
    async () => {
      await fault('k3s-lab-2', 'stop');
      await fault('k3s-lab-3', 'stop');
      try {
        const before = await hostFingerprint('k3s-lab-1');
        for (const args of [['--check'], []]) {
          const r = await bootstrap(['--replace', 'k3s-lab-2', ...args], { stateDir, inventory });
          expect(r.code, r.stdout + r.stderr).toBe(1);
          expect(r.stderr + r.stdout).toContain('QUORUM_AT_RISK');
          expect(r.stdout).not.toMatch(/▸ node-baseline/);
        }
        expect(await hostFingerprint('k3s-lab-1')).toBe(before);
      } finally {
        // Heal for the next file: both boot, k3s starts at boot, etcd has its quorum again.
        await fault('k3s-lab-2', 'start');
        await fault('k3s-lab-3', 'start');
      }
      await expect.poll(() => voters().catch(() => ({})), { timeout: 180_000, interval: 3_000 }).toEqual(ALL_VOTERS);
    },
    LONG,
  );
});
