// The lab fault matrix (test/support/fault-matrix.ts): on the shared, converged cluster each row injects
// its fault at its moment of a run, sees the run stop with the row's cause naming the row's host within the
// budget plus 2 s, heals, and reruns: exit 0, and nothing lost (etcd's voters are the servers, every node
// Ready, a ConfigMap written before the first fault still there).
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fault, hostExec, paths, wipe } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, holdLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster, voters } from '../support/cluster.ts';
import { runFaultRow, type FaultEnv, type Injection } from '../support/fault-run.ts';
import { editFile, labInventory } from '../support/lab-inventory.ts';
import { NET } from '../../lab/config.ts';
import { FAULT_ROWS } from '../support/fault-matrix.ts';

const FOUNDER = 'k3s-lab-1';
const AGENT = 'k3s-lab-agent-1';
const MARKER = 'fault-matrix-marker';
const kubectl = (args: string) => hostExec(FOUNDER, `k3s kubectl ${args}`);
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** Polls `ok` every second until it holds or `ms` ran out (heals that take effect in the background). */
async function until(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok().catch(() => false))) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(1000);
  }
}

const nodesReady = async () => {
  const r = await kubectl(`get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'`);
  const seen = r.stdout.trim().split('\n');
  return seen.length === hosts().length && seen.every((s) => s === 'True');
};

type Env = FaultEnv;

const knownHostsLine = (address: string) =>
  readFileSync(paths.knownHosts, 'utf8')
    .split('\n')
    .findIndex((l) => l.startsWith(`${address} `));
function editKnownHosts(edit: (lines: string[], i: number) => void, name: string): () => void {
  const original = readFileSync(paths.knownHosts, 'utf8');
  const lines = original.split('\n');
  const address = hosts().find((h) => h.name === name)!.address;
  const i = knownHostsLine(address);
  if (i < 0) throw new Error(`no known_hosts line for ${address}`);
  edit(lines, i);
  writeFileSync(paths.knownHosts, lines.join('\n'));
  return () => writeFileSync(paths.knownHosts, original);
}

const restores = new Map<string, () => void>();
let holder: { done: Promise<unknown>; child?: ChildProcess } | undefined;
let route = '';
let agentScope = '';
const HANG_DROP_IN_DIR = '/etc/systemd/system/k3s.service.d';
/** Where containerd keeps a folder per container task (k3s's state under /run/k3s). */
const TASKS = '/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io';
let ss = '';
let identity = { file: '', key: '' };

const INJECTIONS: Record<string, Injection> = {
  'token-torn': {
    inject: async ({ stateDir }) => {
      const file = join(stateDir, 'lab', 'cluster-token.json');
      const text = readFileSync(file, 'utf8');
      restores.set('token-torn', () => writeFileSync(file, text, { mode: 0o600 }));
      writeFileSync(file, text.slice(0, Math.floor(text.length / 2)), { mode: 0o600 });
    },
    heal: async () => restores.get('token-torn')!(),
  },
  'journal-torn': {
    inject: async ({ stateDir }) => {
      const file = join(stateDir, 'lab', 'journal.json');
      const text = readFileSync(file, 'utf8');
      writeFileSync(file, text.slice(0, Math.floor(text.length / 2)));
    },
    heal: async ({ stateDir }) => rmSync(join(stateDir, 'lab', 'journal.json')),
  },
  'known-hosts-missing': {
    inject: async () =>
      void restores.set(
        'kh',
        editKnownHosts((lines, i) => lines.splice(i, 1), 'k3s-lab-3'),
      ),
    heal: async () => restores.get('kh')!(),
  },
  'host-key-changed': {
    inject: async () => {
      // k3s-lab-2's key under k3s-lab-3's address: what a reinstalled (or impostor) host presents.
      const other = readFileSync(paths.knownHosts, 'utf8').split('\n')[knownHostsLine(hosts().find((h) => h.name === 'k3s-lab-2')!.address)];
      const address = hosts().find((h) => h.name === 'k3s-lab-3')!.address;
      restores.set(
        'kh',
        editKnownHosts((lines, i) => (lines[i] = `${address} ${other.split(' ').slice(1).join(' ')}`), 'k3s-lab-3'),
      );
    },
    heal: async () => restores.get('kh')!(),
  },
  'ssh-port-blocked': {
    inject: () => fault('k3s-lab-2', 'block-port', '22'),
    heal: () => fault('k3s-lab-2', 'unblock-port', '22'),
  },
  'operator-partition': {
    inject: () => fault('k3s-lab-3', 'partition'),
    heal: async () => {
      await fault('k3s-lab-3', 'heal');
      await until('k3s-lab-3 Ready after the partition', 120_000, nodesReady);
    },
  },
  'agent-stopped': {
    inject: () => fault('k3s-lab-agent-1', 'stop'),
    heal: async () => {
      await fault('k3s-lab-agent-1', 'start');
      await until('the agent Ready after its boot', 180_000, nodesReady);
    },
  },
  'sudo-revoked': {
    inject: async () => void (await hostExec('k3s-lab-2', "sed -i 's/NOPASSWD://' /etc/sudoers.d/ops")),
    heal: async () => void (await hostExec('k3s-lab-2', "sed -i 's/ALL=(ALL) ALL/ALL=(ALL) NOPASSWD:ALL/' /etc/sudoers.d/ops")),
  },
  'ssh-key-revoked': {
    inject: async () => void (await hostExec('k3s-lab-2', 'mv /home/ops/.ssh/authorized_keys /home/ops/.ssh/authorized_keys.fault')),
    heal: async () => void (await hostExec('k3s-lab-2', 'mv /home/ops/.ssh/authorized_keys.fault /home/ops/.ssh/authorized_keys')),
  },
  'identity-torn': {
    // A copy of the key, named by an inventory of its own, is what tears: the lab's key stays whole.
    inventory: ({ inventory }) => {
      const inv = parse(readFileSync(inventory, 'utf8'));
      const file = writeNear(inventory, '');
      identity = { file: join(file, '..', 'id_ed25519'), key: readFileSync(inv.ssh.identityFile, 'utf8') };
      writeFileSync(identity.file, identity.key, { mode: 0o600 });
      inv.ssh.identityFile = identity.file;
      writeFileSync(file, stringify(inv));
      return file;
    },
    inject: async () => writeFileSync(identity.file, identity.key.slice(0, Math.floor(identity.key.length / 2)), { mode: 0o600 }),
    heal: async () => writeFileSync(identity.file, identity.key, { mode: 0o600 }),
  },
  'sudo-revoked-mid-run': {
    // node-baseline writes the file back (a change: the run's probe answers are forgotten), so rolling-servers'
    // preflight asks its probes again, through sudo, after the fault.
    setup: async () => void (await hostExec('k3s-lab-2', 'rm -f /etc/modules-load.d/k3s.conf')),
    inject: async () => void (await hostExec('k3s-lab-2', "sed -i 's/NOPASSWD://' /etc/sudoers.d/ops")),
    // Nothing removed by hand: the stopped run released its lock there without sudo (the SSH user owns it),
    // or the rerun would stop with LOCK_HELD.
    heal: async () => void (await hostExec('k3s-lab-2', "sed -i 's/ALL=(ALL) ALL/ALL=(ALL) NOPASSWD:ALL/' /etc/sudoers.d/ops")),
  },
  'lock-held': {
    inject: async () => {},
    alongside: ({ inventory }) => {
      let started!: () => void;
      const startedP = new Promise<void>((res) => (started = res));
      // A run of its own state folder (another operator's laptop), held in verify (frozen there, its locks
      // taken) while the row's run starts: a verify that ends first would let the row's run take the locks.
      const done = bootstrap(VERIFY_ARGS, {
        stateDir: freshStateDir(),
        inventory,
        onEvent: (e, child) => {
          if (e.type !== 'phase-start' || e.phase !== 'verify') return;
          child.kill('SIGSTOP');
          holder = { done, child };
          started();
        },
      });
      // A holder that ended before verify (refused itself) lets the row go on, to fail on what it sees.
      void done.then(
        () => started(),
        () => started(),
      );
      holder = { done };
      return { started: startedP, done };
    },
    heal: async () => {
      holder!.child?.kill('SIGCONT');
      const r = (await holder!.done) as { code: number | null; stdout: string };
      expect(r.code, r.stdout.slice(-2000)).toBe(0);
    },
  },
  'disk-full': {
    inject: () => fault('k3s-lab-3', 'fill-disk'),
    heal: async () => {
      await fault('k3s-lab-3', 'free-disk');
      // etcd's WAL is on that disk: its member may have failed a write while the disk was full, and the
      // leader's EtcdIsVoter tick (15 s) reports it a voter again only after k3s has recovered.
      await until('k3s-lab-3 a voter again after the disk was freed', 120_000, async () => (await voters())['k3s-lab-3'] === 'True' && nodesReady());
    },
  },
  'clock-skew': {
    inject: () => fault('k3s-lab-2', 'clock-skew', '600'),
    heal: () => fault('k3s-lab-2', 'clock-skew', '0'),
  },
  'nic-renamed': {
    inventory: ({ inventory }) => {
      // kube-vip's NIC named in the inventory (the lab's is eth0), as operators with several NICs do.
      const inv = parse(readFileSync(inventory, 'utf8'));
      inv.controlPlane.interface = 'eth0';
      return writeNear(inventory, stringify(inv));
    },
    inject: () => fault('k3s-lab-3', 'rename-nic', 'ens5'),
    heal: () => fault('k3s-lab-3', 'rename-nic', 'eth0'),
  },
  'tool-removed': {
    inject: async () => {
      ss = (await hostExec('k3s-lab-3', 'command -v ss')).stdout.trim();
      await hostExec('k3s-lab-3', `mv ${ss} ${ss}.fault`);
    },
    heal: async () => void (await hostExec('k3s-lab-3', `mv ${ss}.fault ${ss}`)),
  },
  'ssh-dropped-mid-batch': {
    // ss, which the batch's port probe runs as root, replaced by a script that first kills the host's sshd
    // sessions of ops (the engine's connection) and then waits: the batch is cut off in its middle.
    inject: async () => {
      ss = (await hostExec('k3s-lab-3', 'command -v ss')).stdout.trim();
      await hostExec(
        'k3s-lab-3',
        `mv ${ss} ${ss}.fault && printf '#!/bin/sh\\npkill -KILL -f "^sshd: ops"\\nsleep 5\\nexec ${ss}.fault "$@"\\n' > ${ss} && chmod 755 ${ss}`,
      );
    },
    heal: async () => void (await hostExec('k3s-lab-3', `mv -f ${ss}.fault ${ss}`)),
  },
  'default-route-lost': {
    inject: async () => {
      route = (await hostExec('k3s-lab-3', 'ip -4 route show default')).stdout.trim();
      await hostExec('k3s-lab-3', 'ip route del default');
    },
    heal: async () => void (await hostExec('k3s-lab-3', `ip route replace ${route}`)),
  },
  'k3s-stopped': {
    inject: async () => void (await hostExec('k3s-lab-3', 'systemctl stop k3s.service')),
    heal: async () => {
      await hostExec('k3s-lab-3', 'systemctl start --no-block k3s.service');
      await until(
        'k3s-lab-3 Ready after k3s started',
        180_000,
        async () =>
          (await hostExec('k3s-lab-3', 'k3s kubectl get --raw /readyz --request-timeout=3s', { allowFail: true })).stdout.trim() === 'ok' && nodesReady(),
      );
    },
  },
  'apiserver-port-blocked': {
    inject: () => fault('k3s-lab-3', 'block-port', '6443'),
    heal: () => fault('k3s-lab-3', 'unblock-port', '6443'),
  },
  'join-peers-cut': {
    setup: () => neverJoined('k3s-lab-3'),
    inject: () => fault('k3s-lab-3', 'cut-peers'),
    heal: () => fault('k3s-lab-3', 'heal-peers'),
  },
  'join-etcd-member-killed': {
    setup: () => neverJoined('k3s-lab-3'),
    // A crash, not a shutdown: every process of the unit (k3s and its etcd child) gets SIGKILL at once;
    // the stop right after cancels systemd's restart (Restart=always), so the member stays dead.
    inject: async () => void (await hostExec('k3s-lab-2', 'systemctl kill --signal=SIGKILL k3s.service; systemctl stop k3s.service; pkill -9 -x etcd; true')),
    heal: async () => {
      await hostExec('k3s-lab-2', 'systemctl start --no-block k3s.service');
      await until('k3s-lab-2 serving again (quorum back)', 120_000, () => readyz('k3s-lab-2'));
    },
  },
  'coredns-down': {
    inject: async () => void (await kubectl(`-n kube-system patch deployment coredns --type merge -p '{"spec":{"replicas":0}}'`)),
    heal: async () => {
      await kubectl(`-n kube-system patch deployment coredns --type merge -p '{"spec":{"replicas":1}}'`);
      await until(
        'CoreDNS ready again',
        120_000,
        async () => (await kubectl("-n kube-system get deployment coredns -o jsonpath='{.status.readyReplicas}'")).stdout.trim() === '1',
      );
    },
  },
  'vip-blocked-from-server': {
    inject: () => fault('k3s-lab-2', 'block-egress', `${NET.vip}:6443`),
    heal: () => fault('k3s-lab-2', 'unblock-egress', `${NET.vip}:6443`),
  },
  'agent-reinstalled': {
    // A new disk and host key under the same address and name; the cluster still has the old host's Node.
    inject: () => wipe(AGENT),
    // Deleting the Node deletes the Secret; the reinstalled agent, refused every 5 s until then, may register
    // at once with its new password, which makes the Secret anew: gone or another one, the old one is gone.
    heal: async () => {
      const secretUid = async () => {
        const r = await kubectl(`get secret -n kube-system ${AGENT}.node-password.k3s --ignore-not-found -o jsonpath='{.metadata.uid}'`);
        return r.code === 0 ? r.stdout.trim() : undefined;
      };
      const old = await secretUid();
      await kubectl(`delete node ${AGENT} --wait=true`);
      await until(`${AGENT}'s node-password Secret gone with its Node`, 60_000, async () => {
        const now = await secretUid();
        return now !== undefined && now !== old;
      });
    },
  },
  'join-stalled': {
    setup: () => neverJoined('k3s-lab-3'),
    // systemd runs the unit's ExecStartPre lines in order before k3s; this one never returns, and with
    // TimeoutStartSec=0 (install.sh's) systemd waits for it for ever: no k3s process, no journal line of k3s's.
    inject: async () =>
      void (await hostExec(
        'k3s-lab-3',
        `mkdir -p ${HANG_DROP_IN_DIR} && printf '[Service]\nExecStartPre=/bin/sleep infinity\n' > ${HANG_DROP_IN_DIR}/fault-hang.conf && systemctl daemon-reload`,
      )),
    heal: async () =>
      void (await hostExec('k3s-lab-3', `rm -f ${HANG_DROP_IN_DIR}/fault-hang.conf; systemctl daemon-reload; systemctl stop k3s.service; true`)),
  },
  'cilium-agent-hung': {
    inject: async () => {
      // The agent's task (the folder containerd keeps per container, its config naming the program): its
      // id names the container's scope (containerd's systemd cgroup driver: cri-containerd-<id>.scope).
      const id = (
        await hostExec(
          'k3s-lab-3',
          `for d in ${TASKS}/*/; do grep -q '"program":"cilium-agent"' "$d/config.json" 2>/dev/null && basename "$d"; done | head -n 1`,
        )
      ).stdout.trim();
      if (!id) throw new Error('no cilium-agent task on k3s-lab-3');
      agentScope = `cri-containerd-${id}.scope`;
      await hostExec('k3s-lab-3', `systemctl kill --signal=SIGSTOP ${agentScope}`);
    },
    heal: async () => void (await hostExec('k3s-lab-3', `systemctl kill --signal=SIGCONT ${agentScope}`)),
  },
  'rollout-vip-blocked': {
    // The shared checkout with one harmless value more (an extra env var of the agent container): a new pod
    // template, so `--only cilium` writes a new HelmChart and the DaemonSet rolls. Not published: no Flux here.
    inventory: () =>
      labInventory({
        publish: false,
        gitops: (checkout) =>
          editFile(
            join(checkout, 'platform', 'cilium', 'helmrelease.yaml'),
            /\n    kubeProxyReplacement: true\n/,
            '\n    kubeProxyReplacement: true\n    extraEnv: [{ name: FAULT_MATRIX_ROLLOUT, value: "1" }]\n',
          ),
      }),
    inject: () => fault(AGENT, 'block-egress', `${NET.vip}:6443`),
    heal: () => fault(AGENT, 'unblock-egress', `${NET.vip}:6443`),
  },
};

const VERIFY_ARGS = ['--only', 'verify', '--json'];

/**
 * A server back to "never joined" (as k3s-join-causes.test.ts resets its joiners): k3s stopped, its etcd
 * killed, its k3s state, binary and unit gone, and its Node deleted through the founder, whose finalizer
 * removes its etcd member. The cluster goes on with the other two voters.
 */
async function neverJoined(name: string): Promise<void> {
  await hostExec(
    name,
    // Its pods' containers outlive k3s (KillMode=process): stopped with their slice, as an uninstall's killall
    // does, so no orphaned Cilium agent keeps the node's Cilium socket from the one the rejoin starts.
    'systemctl stop k3s.service; pkill -9 -x etcd; systemctl stop kubepods.slice; rm -rf /var/lib/rancher/k3s /etc/rancher /usr/local/bin/k3s /etc/systemd/system/k3s.service /var/run/cilium; systemctl daemon-reload; systemctl reset-failed; true',
  );
  await kubectl(`delete node ${name} --ignore-not-found`);
}

/** The API of a server answers /readyz (its etcd has quorum). */
const readyz = async (name: string) => (await hostExec(name, 'k3s kubectl get --raw /readyz --request-timeout=3s', { allowFail: true })).stdout.trim() === 'ok';

/** A copy of the inventory in a folder of its own beside it (an environment is named after its file). */
function writeNear(inventory: string, text: string): string {
  const dir = join(inventory, '..', `variant-${Math.random().toString(36).slice(2, 8)}`);
  const file = join(dir, 'lab.yaml');
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, text);
  return file;
}

describeAsRoot('the lab fault matrix', () => {
  const base: Env = { stateDir: freshStateDir(), inventory: '' };
  const timings: string[] = [];

  beforeAll(async () => {
    await ensureLab();
    base.inventory = labInventory();
    // The cluster every row starts from, built from nothing: its token is this file's (a cluster another
    // file built has a token of another state folder). Flux is left out: no row needs it.
    await resetCluster();
    const r = await bootstrap(['--until', 'verify', '--json'], { ...base, timeoutMs: 900_000 });
    expect(r.code, r.stdout.slice(-3000)).toBe(0);
    await kubectl(`create configmap ${MARKER} -n default --from-literal=written=before-the-faults --dry-run=client -o yaml | k3s kubectl apply -f -`);
  }, 1_600_000);

  afterAll(() => {
    // Each row's cost, so the matrix's share of CI time can be read off the run.
    console.info(`fault matrix timings:\n${timings.join('\n')}`);
  });

  for (const row of FAULT_ROWS.filter((r) => !r.file)) {
    it(`${row.id}: ${row.fault}, at ${row.moment} → ${row.cause} (${row.host})`, async () => {
      const how = INJECTIONS[row.id];
      expect(how, `no injection for row ${row.id}`).toBeDefined();
      const t0 = Date.now();
      const release = await holdLab();
      try {
        // The run may wait out its gate's whole budget after the phases before it.
        const { tookMs, healAndRerunMs } = await runFaultRow(row, how, base, { timeoutMs: Math.max(300_000, row.budgetMs + 240_000) });
        // Nothing lost.
        const servers = hosts()
          .filter((h) => h.role === 'server')
          .map((h) => h.name);
        const allVoters = Object.fromEntries(servers.map((s) => [s, 'True']));
        // A node the heal or the rerun brought back reports Ready, and a server's EtcdIsVoter, at their next
        // heartbeat or the leader's next 15 s tick: waited for (bounded), then judged with what is seen.
        await until('every server a voter, every node Ready', 120_000, async () => {
          const seen = await voters();
          return Object.keys(seen).length === servers.length && servers.every((n) => seen[n] === 'True') && nodesReady();
        }).catch(() => undefined);
        expect(await voters()).toEqual(allVoters);
        expect(await nodesReady()).toBe(true);
        expect((await kubectl(`get configmap ${MARKER} -n default -o jsonpath='{.data.written}'`)).stdout).toBe('before-the-faults');
        timings.push(
          `${row.id}: ${((Date.now() - t0) / 1000).toFixed(1)} s (stop ${(tookMs / 1000).toFixed(1)} s after the fault, heal + rerun ${(healAndRerunMs / 1000).toFixed(1)} s)`,
        );
      } finally {
        release();
      }
    }, 900_000);
  }
});
