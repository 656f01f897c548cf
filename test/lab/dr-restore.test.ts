// The disaster-recovery drill, through the commands of runbooks/dr-restore.md as an operator types them,
// on the bastion lab (`lab up --bastion`: 3 servers and 1 agent on a segment this machine has no address or
// route on, one bastion host with a leg on each and no IP forwarding), so every step reaches the cluster
// only through SSH via the bastion, the operator-side checks (the VIP's TLS handshake, the API) through SSH
// forwarding: a cold build (verify included), the failover drill, 200 objects (ConfigMaps, Secrets, a CRD
// and its CRs), `bootstrap backup`, the fetched kubeconfig's own instructions for reaching the API from here,
// the whole lab destroyed (`lab down`, `lab up --bastion`: new hosts, same addresses, new host keys),
// refusals of a backup without its token and of a corrupted snapshot before any host is touched, the
// restore's plan (check mode changes nothing), then `bootstrap lab --restore <backup>` meeting the fault-matrix
// row restore-server-lost (k3s-lab-3 loses power as k3s-join starts to rejoin it: SSH_UNREACHABLE naming it
// within the keepalive budget), the host powered on, and the runbook's restore command again: it finishes
// what the stopped one left (the founder not restored again, k3s-lab-2 not wiped again), every object back
// with the same content, 3 voters, the agent back, the VIP up, verify passing; last, behind the same bastion,
// the agent removed (--remove) and the cluster taken down (--reset --yes). One cluster for the whole file.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { bastion, down, fault, hostExec, proxyThroughBastion, ssh, up } from '../../lab/api.ts';
import { NET, OPS_USER, OUTSIDE, paths } from '../../lab/config.ts';
import { tcpOpen } from '../../lab/operator.ts';
import { run } from '../../lab/run.ts';
import { kubeConfigFor } from '../../src/kube/client.ts';
import { labInventoryWithGitops } from '../../lab/gitops-inventory.ts';
import { lastBuiltPhase } from '../../modes/compose.ts';
import { allPhases, validatedOrder } from '../../phases/index.ts';
import { listBackups } from '../../src/backup/store.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, hostFingerprint, k3sLeftOn, resetCluster, stopOf, voters } from '../support/cluster.ts';
import { labBlock, runBlock } from '../support/runbook-blocks.ts';
import { repoRoot } from '../support/cli.ts';
import { secretLeaks } from '../support/secret-scan.ts';
import { FAULT_ROWS } from '../support/fault-matrix.ts';
import { runFaultRow, type Injection } from '../support/fault-run.ts';

const RUNBOOK = readFileSync(`${repoRoot}/runbooks/dr-restore.md`, 'utf8');
const SHAPE = { servers: 3, agents: 1, bastion: true };
const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
const AGENT = 'k3s-lab-agent-1';
const NODES = [...SERVERS, AGENT];
const NS = 'dr-drill';
const LONG = 1_200_000;
const LAST = lastBuiltPhase(validatedOrder(allPhases()))!;

/** 200 objects: the namespace, a CRD, 50 of its CRs, 74 ConfigMaps and 74 Secrets. */
function drillObjects(): { crd: string; rest: string } {
  const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.drill.example.com}
spec:
  group: drill.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`;
  const docs = [`apiVersion: v1\nkind: Namespace\nmetadata: {name: ${NS}}`];
  for (let i = 0; i < 50; i++)
    docs.push(`apiVersion: drill.example.com/v1\nkind: Widget\nmetadata: {name: w-${i}, namespace: ${NS}}\nspec: {size: ${i}, colour: "c${i % 7}"}`);
  for (let i = 0; i < 74; i++)
    docs.push(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-${i}, namespace: ${NS}}\ndata: {i: "${i}", text: "config ${i * 31}"}`);
  for (let i = 0; i < 74; i++)
    docs.push(`apiVersion: v1\nkind: Secret\nmetadata: {name: s-${i}, namespace: ${NS}}\ntype: Opaque\nstringData: {password: "pw-${i}-${(i * 7919) % 1000}"}`);
  return { crd, rest: docs.join('\n---\n') + '\n' };
}

/** The drill's objects as content: kind/name → data or spec (what a restore must bring back unchanged). */
async function drillContent(): Promise<Record<string, string>> {
  const res = await hostExec(
    'k3s-lab-1',
    `k3s kubectl get namespace ${NS} -o json; k3s kubectl get crd widgets.drill.example.com -o json; k3s kubectl get configmaps,secrets,widgets -n ${NS} -o json`,
  );
  const out: Record<string, string> = {};
  // Three JSON documents, one after the other.
  const docs = res.stdout.split(/\n(?=\{)/).map((d) => JSON.parse(d));
  for (const doc of docs) {
    for (const o of doc.items ?? [doc]) {
      if (o.kind === 'ConfigMap' && o.metadata.name === 'kube-root-ca.crt') continue; // made by a controller
      out[`${o.kind}/${o.metadata.name}`] = JSON.stringify(o.data ?? o.spec ?? null);
    }
  }
  return out;
}

/** The reasons of the node-password Events of a Node, oldest first (k3s pkg/nodepassword/validate.go ensureSecret). */
async function passwordEvents(node: string): Promise<string[]> {
  const res = await hostExec('k3s-lab-1', 'k3s kubectl get events -A -o json');
  const items: any[] = JSON.parse(res.stdout).items ?? [];
  return items
    .filter((e) => e.involvedObject?.kind === 'Node' && e.involvedObject?.name === node && /^NodePasswordValidation/.test(e.reason))
    .sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)))
    .map((e) => e.reason);
}

/** A local TCP port nobody listens on (for the tunnel the kubeconfig describes). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** ssh from this machine straight to an address, without the bastion (strict host keys, no prompt). */
function directSsh(address: string) {
  const opts = [
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${paths.knownHosts}`,
    '-o',
    'BatchMode=yes',
    '-o',
    'ConnectTimeout=3',
    '-i',
    paths.key,
  ];
  return run('ssh', [...opts, `${OPS_USER}@${address}`, 'true'], { allowFail: true, timeoutMs: 15_000 });
}

/** A TLS handshake from this machine straight to address:port, verified against `ca`. */
function tlsFromHere(address: string, port: number, ca: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: address, port, ca, checkServerIdentity: () => undefined });
    const done = (what: string) => {
      socket.destroy();
      resolve(what);
    };
    socket.setTimeout(3000, () => done('no handshake: timeout'));
    socket.once('secureConnect', () => done('handshake'));
    socket.once('error', (e) => done(`no handshake: ${e.message}`));
  });
}

/** `bootstrap verify lab …` as an operator runs it (plain output), scanned for secrets like every run. */
function verifyRun(extra: string[], opts: { stateDir: string; inventory: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/bootstrap.js'), 'verify', 'lab', '--inventory', opts.inventory, ...extra], {
      cwd: repoRoot,
      env: { ...process.env, BOOTSTRAP_STATE_DIR: opts.stateDir, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), LONG);
    child.on('close', (code) => {
      clearTimeout(timer);
      const leaks = secretLeaks({ stdout, stderr }, opts.stateDir, opts.inventory);
      if (leaks.length) reject(new Error(`the run leaked secrets:\n${leaks.join('\n')}`));
      else resolve({ code, stdout, stderr });
    });
  });
}

describeAsRoot('disaster recovery behind a bastion: cold build, drill, bootstrap backup, the lab destroyed, bootstrap lab --restore', () => {
  const stateDir = freshStateDir();
  const envState = join(stateDir, 'lab');
  let inventory: string;
  let backupId: string;
  let before: Record<string, string>;
  const address = (name: string) => hosts().find((h) => h.name === name)!.address;
  const clusterCa = () =>
    Buffer.from(parse(readFileSync(join(envState, 'kubeconfig'), 'utf8')).clusters[0].cluster['certificate-authority-data'], 'base64').toString();
  const block = (name: string, values: Record<string, string> = {}) =>
    runBlock(labBlock(RUNBOOK, name), {
      env: 'lab',
      inventory,
      stateDir,
      values: { backup: backupId, user: OPS_USER, server: address('k3s-lab-1'), ...values },
      // The operator's ssh reaches the hosts through the bastion (as a ProxyJump in ~/.ssh/config would).
      ssh: { identityFile: paths.key, knownHostsFile: paths.knownHosts, jump: proxyThroughBastion() },
      timeoutMs: LONG,
    });

  beforeAll(async () => {
    // The shared lab's 3 servers and 1 agent, behind the bastion: `lab up` swaps the shape in seconds (no
    // cluster is kept across files anyway; each file builds its own from cold).
    await ensureLab(SHAPE);
    await resetCluster();
    inventory = labInventoryWithGitops();
  }, LONG);

  it(
    'the bastion lab: this machine reaches the bastion only; the hosts behind it answer SSH through it',
    async () => {
      const jump = bastion();
      expect(jump).toMatchObject({ name: 'lab-bastion', address: OUTSIDE.bastion });
      expect(parse(readFileSync(inventory, 'utf8')).ssh.bastion).toBe(`${OPS_USER}@${OUTSIDE.bastion}:22`);
      expect(readFileSync(paths.knownHosts, 'utf8')).toMatch(new RegExp(`^${OUTSIDE.bastion.replaceAll('.', '\\.')} ssh-ed25519 `, 'm'));
      expect((await directSsh(OUTSIDE.bastion)).code).toBe(0);
      // No address of this machine's on the hosts' segment, so no route onto it (a host's address goes the
      // machine's default way, which does not lead there): ssh from here, without the jump, reaches no host.
      expect((await run('ip', ['-o', 'addr', 'show', 'dev', NET.bridge])).stdout).not.toMatch(/\binet6? /);
      expect((await run('ip', ['route', 'get', hosts()[0].address])).stdout).not.toContain(NET.bridge);
      const reach = await Promise.all(hosts().map(async (h) => [h.name, (await directSsh(h.address)).code === 0] as const));
      expect(Object.fromEntries(reach)).toEqual(Object.fromEntries(NODES.map((n) => [n, false])));
      // The bastion forwards no packets between its legs: only an SSH channel crosses it.
      expect((await hostExec(jump!.name, 'cat /proc/sys/net/ipv4/ip_forward')).stdout.trim()).toBe('0');
      expect((await hostExec(jump!.name, 'ip -o -4 addr show')).stdout).toContain(`${NET.operator}/24`);
      // `lab ssh` (and every lab check) jumps through it.
      expect((await ssh('k3s-lab-1', 'hostname')).stdout.trim()).toBe('k3s-lab-1');
    },
    LONG,
  );

  it(
    'cold build, 200 objects, and a backup with the runbook commands (0700/0600, the token never printed)',
    async () => {
      const build = await bootstrap(['--until', LAST, '--json'], { stateDir, inventory, timeoutMs: LONG });
      expect(stopOf(build), JSON.stringify(stopOf(build))).toBeUndefined();
      // The VIP gate's handshake from the operator passed although this machine cannot reach the VIP: it went
      // through the founder's SSH connection, which goes through the bastion.
      expect(build.events.some((e) => e.type === 'phase-end' && e.phase === 'verify' && e.status === 'done')).toBe(true);
      expect(await tlsFromHere(NET.vip, 6443, clusterCa())).toMatch(/^no handshake/);
      const { crd, rest } = drillObjects();
      await hostExec('k3s-lab-1', 'k3s kubectl apply -f -', { input: crd });
      await hostExec('k3s-lab-1', 'k3s kubectl wait --for=condition=Established crd/widgets.drill.example.com --timeout=60s');
      await hostExec('k3s-lab-1', 'k3s kubectl apply -f -', { input: rest });
      before = await drillContent();
      expect(Object.keys(before)).toHaveLength(200);

      backupId = 'none-yet';
      const r = await block('backup');
      expect(r.code, r.stderr + r.stdout).toBe(0);
      const [backup] = listBackups(envState);
      backupId = backup.manifest.id;
      expect(r.stdout).toContain(`${backupId}  k3s ${backup.manifest.k3sVersion}  on k3s-lab-1`);
      expect(backup.manifest.servers).toEqual(SERVERS);
      expect(backup.manifest.counts).toMatchObject({
        ConfigMap: expect.any(Number),
        Secret: expect.any(Number),
        Widget: 50,
        CustomResourceDefinition: expect.any(Number),
      });
      expect(backup.manifest.objects).toContain(`Widget/${NS}/w-49`);
      expect(statSync(backup.dir).mode & 0o777).toBe(0o700);
      for (const f of ['snapshot', 'cluster-token.json', 'manifest.json']) expect(statSync(join(backup.dir, f)).mode & 0o777, f).toBe(0o600);
      const token = JSON.parse(readFileSync(join(backup.dir, 'cluster-token.json'), 'utf8'));
      expect(token.full).toMatch(/^K10[0-9a-f]+::server:/);
      expect(r.stdout + r.stderr).not.toContain(token.secret);
    },
    LONG,
  );

  it(
    'the failover drill through the bastion: k3s stopped on the VIP holder, the VIP moves, the server rejoins as a voter',
    async () => {
      const r = await verifyRun(['--drill'], { stateDir, inventory });
      expect(r.code, r.stdout.slice(-3000) + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/failover drill: ok \(VIP moved from k3s-lab-\d to k3s-lab-\d in \d+\.\d s \(limit \d+ s\); k3s-lab-\d back as a voter after/);
      expect(await voters()).toEqual({ 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' });
    },
    LONG,
  );

  it(
    'the fetched kubeconfig says how to reach the API from this machine through the bastion, and that works',
    async () => {
      const text = readFileSync(join(envState, 'kubeconfig'), 'utf8');
      const tunnel = `ssh -N -L 6443:${NET.vip}:6443 -i ${paths.key} -o UserKnownHostsFile=${paths.knownHosts} -p 22 ${OPS_USER}@${OUTSIDE.bastion}`;
      expect(text.split('\n').slice(0, 5)).toEqual([
        `# This kubeconfig dials the control-plane VIP https://${NET.vip}:6443, which is on the node LAN behind the`,
        `# bastion ${OUTSIDE.bastion}. From the operator's machine, open a tunnel through the bastion first:`,
        `#   ${tunnel}`,
        "# and then, in another terminal, dial its local end (127.0.0.1 is a SAN of the API's certificate):",
        `#   kubectl --kubeconfig ${join(envState, 'kubeconfig')} --server https://127.0.0.1:6443 get nodes`,
      ]);
      // The tunnel as written (on a free local port, failing instead of prompting), then the kubeconfig's own
      // credentials and CA through it: TLS verifies against the cluster CA on 127.0.0.1.
      const port = await freePort();
      const child = spawn('bash', ['-c', `exec ${tunnel.replace('ssh -N -L 6443:', `ssh -o BatchMode=yes -o ExitOnForwardFailure=yes -N -L ${port}:`)}`], {
        stdio: 'ignore',
      });
      try {
        await expect.poll(() => tcpOpen('127.0.0.1', port, 500), { timeout: 15_000, interval: 200 }).toBe(true);
        const kc = kubeConfigFor(envState, { tunnelPort: port });
        expect(kc.getCurrentCluster()?.skipTLSVerify).toBeFalsy();
        const nodes = await kc.makeApiClient(CoreV1Api).listNode();
        expect(nodes.items.map((n) => n.metadata?.name).sort()).toEqual(NODES);
      } finally {
        child.kill();
      }
    },
    LONG,
  );

  it(
    'on the running cluster, the restore plan names the servers whose datastore would be WIPED, and wipes nothing',
    async () => {
      const fingerprints = await Promise.all(SERVERS.map(hostFingerprint));
      const r = await bootstrap(['--restore', backupId, '--check'], { stateDir, inventory });
      expect(r.code, r.stderr).toBe(2);
      for (const s of ['k3s-lab-2', 'k3s-lab-3']) {
        expect(r.stdout).toMatch(
          new RegExp(`  ${s}  stop k3s and wipe [^\\n]*: would change\\n    would stop k3s\\n[^\\n]*\\n    would WIPE this server's datastore`),
        );
      }
      expect(await Promise.all(SERVERS.map(hostFingerprint))).toEqual(fingerprints);
      for (const s of SERVERS) expect((await hostExec(s, 'test -d /var/lib/rancher/k3s/server/db/etcd && echo kept')).stdout.trim()).toBe('kept');
      expect(await drillContent()).toEqual(before);
    },
    LONG,
  );

  it(
    'the lab is destroyed: lab down, lab up --bastion — new hosts at the same addresses with new host keys',
    async () => {
      const keysBefore = readFileSync(paths.knownHosts, 'utf8');
      await down();
      await up(SHAPE);
      expect(readFileSync(paths.knownHosts, 'utf8')).not.toEqual(keysBefore);
      expect(hosts().map((h) => h.address)).toEqual(NODES.map((_, i) => `${NET.base}${NET.firstHost + i}`));
      for (const h of NODES) expect((await hostExec(h, 'test -e /var/lib/rancher/k3s && echo present || echo absent')).stdout.trim()).toBe('absent');
      // The GitOps server went down with the lab: publish the repository again, as after a real disaster.
      inventory = labInventoryWithGitops();
      // The operator lost the state folder's token too; the backups were kept elsewhere.
      rmSync(join(envState, 'cluster-token.json'));
    },
    LONG,
  );

  it(
    'a backup without its token → BACKUP_TOKEN_MISSING, a corrupted snapshot → SNAPSHOT_CHECKSUM_MISMATCH, before any host is touched',
    async () => {
      const fingerprints = await Promise.all(NODES.map(hostFingerprint));
      const copies = mkdtempSync(join(tmpdir(), 'dr-backups-'));
      const [backup] = listBackups(envState);
      const tokenless = join(copies, 'tokenless');
      cpSync(backup.dir, tokenless, { recursive: true });
      rmSync(join(tokenless, 'cluster-token.json'));
      const corrupted = join(copies, 'corrupted');
      cpSync(backup.dir, corrupted, { recursive: true });
      const snap = readFileSync(join(corrupted, 'snapshot'));
      snap[Math.floor(snap.length / 2)] ^= 0xff;
      writeFileSync(join(corrupted, 'snapshot'), snap);

      for (const [dir, cause] of [
        [tokenless, 'BACKUP_TOKEN_MISSING'],
        [corrupted, 'SNAPSHOT_CHECKSUM_MISMATCH'],
      ]) {
        const r = await bootstrap(['--restore', dir, '--json'], { stateDir, inventory });
        expect(r.code).toBe(1);
        expect(stopOf(r)).toMatchObject({ cause });
        expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
      }
      expect(await Promise.all(NODES.map(hostFingerprint))).toEqual(fingerprints);
      rmSync(copies, { recursive: true, force: true });
    },
    LONG,
  );

  it(
    "the restore's plan (check mode) names the cluster-reset and changes nothing",
    async () => {
      const fingerprints = await Promise.all(NODES.map(hostFingerprint));
      const r = await block('restore-check');
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toContain(`--cluster-reset --cluster-reset-restore-path=/var/lib/rancher/k3s/server/restore/${backupId}.db`);
      expect(r.stdout).toContain('on k3s-lab-2: stop k3s before the restore');
      // The reinstalled hosts have new node passwords: the ones the snapshot holds go, before any node rejoins.
      expect(r.stdout).toContain(
        `would delete the node-password Secrets of ${NODES.join(', ')} (from the backup; each node records its current password when it registers again)`,
      );
      expect(await Promise.all(NODES.map(hostFingerprint))).toEqual(fingerprints);
      expect(existsSync(join(envState, 'cluster-token.json'))).toBe(false);
    },
    LONG,
  );

  it(
    'bootstrap lab --restore, k3s-lab-3 losing power as k3s-join starts to rejoin it → SSH_UNREACHABLE naming it; powered on, the same restore finishes: every object back by content, 3 voters, the agent back, the VIP up, verify passes',
    async () => {
      const S3 = 'k3s-lab-3';
      const injection: Injection = {
        // A power cut: the cable goes first, so the host's dying sockets say nothing on the wire (the lab's
        // `stop` alone kills the processes while the NIC is still up, and their kernel sockets close cleanly,
        // which a real power cut never does). The run notices by its unanswered SSH keepalives.
        inject: async () => {
          await fault(S3, 'partition');
          await fault(S3, 'stop');
        },
        heal: async () => {
          await fault(S3, 'heal');
          await fault(S3, 'start');
        },
        // The runbook's restore command, as the operator types it again.
        rerun: () => block('restore'),
      };
      const t0 = Date.now();
      const row = FAULT_ROWS.find((r) => r.id === 'restore-server-lost')!;
      const {
        stopped,
        rerun: r,
        runMs,
        tookMs,
        healAndRerunMs,
      } = await runFaultRow(row, injection, { stateDir, inventory, values: { backup: backupId } }, { timeoutMs: LONG });
      const ms = Date.now() - t0;
      console.log(
        `dr drill: bootstrap lab --restore from start to verified in ${(ms / 1000).toFixed(1)} s: stopped after ${(runMs / 1000).toFixed(1)} s ` +
          `(SSH_UNREACHABLE ${(tookMs / 1000).toFixed(1)} s after the power cut), heal + the restore again ${(healAndRerunMs / 1000).toFixed(1)} s`,
      );
      expect(stopOf(stopped)).toMatchObject({ cause: 'SSH_UNREACHABLE', host: S3, message: `lost the SSH connection to ${S3} while a command ran` });
      // How far the stopped restore got: the founder restored, k3s-lab-2 wiped and rejoined as a voter.
      const ended = (step: string, host: string) => stopped.events.find((e) => e.type === 'step-end' && e.step === step && e.host === host)?.status;
      expect(ended('restore', 'k3s-lab-1')).toBe('changed');
      expect(ended('restore-wipe', 'k3s-lab-2')).toBe('changed');
      expect(stopped.events.some((e) => e.type === 'gate-end' && e.gate === 'etcd-voter' && e.host === 'k3s-lab-2' && e.status === 'ok')).toBe(true);
      // The rerun went on from there: neither the founder restored again nor k3s-lab-2 wiped again.
      expect(r.stdout).toMatch(new RegExp(`\n  k3s-lab-1  restore etcd from backup ${backupId} [^\n]*: ok\n`));
      expect(r.stdout).toMatch(/\n  k3s-lab-2  stop k3s and wipe [^\n]*: ok\n/);
      expect(r.stdout).toMatch(/\n  k3s-lab-3  stop k3s and wipe [^\n]*: changed\n/);
      expect(r.stdout).toMatch(/every object of backup \S+ is back \(\d+ objects\): ok/);
      expect(r.stdout).toMatch(/verify done/);
      expect(await drillContent()).toEqual(before);
      expect(await voters()).toEqual({ 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' });
      // The reinstalled agent registered again under its old Node (its stale password Secret was forgotten).
      const ready = await hostExec('k3s-lab-1', `k3s kubectl get node ${AGENT} -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'`);
      expect(ready.stdout.trim()).toBe('True');
      expect(await passwordEvents(AGENT)).not.toContain('NodePasswordValidationFailed');
      // Every host was reinstalled: each has a new /etc/rancher/node/password, and the snapshot holds the old
      // ones. A server's own node is verified locally by k3s and the Secret checked afterwards, as an Event:
      // the joiners' checks pass (the restore forgot the old passwords before they rejoined), none failed.
      for (const s of ['k3s-lab-2', 'k3s-lab-3']) {
        const reasons = await passwordEvents(s);
        expect(reasons, s).not.toContain('NodePasswordValidationFailed');
        expect(reasons, s).toContain('NodePasswordValidationComplete');
      }
      const vip = await hostExec('k3s-lab-2', `k3s kubectl --server https://${NET.vip}:6443 get --raw=/readyz`);
      expect(vip.stdout.trim()).toBe('ok');
      // The restored cluster keeps the backup's token; the state folder has it again (0600).
      const [backup] = listBackups(envState);
      expect(readFileSync(join(envState, 'cluster-token.json'), 'utf8')).toEqual(readFileSync(join(backup.dir, 'cluster-token.json'), 'utf8'));
      expect(statSync(join(envState, 'cluster-token.json')).mode & 0o777).toBe(0o600);
    },
    LONG,
  );

  it(
    'a second restore of the same backup, and a plain run after it, change nothing; the confirm commands show every server a voter',
    async () => {
      const again = await bootstrap(['--restore', backupId], { stateDir, inventory, timeoutMs: LONG });
      expect(again.code, again.stdout.slice(-2000)).toBe(0);
      expect(again.stdout).toMatch(/^\d+ ok, 0 changed/m);
      // The restored cluster is a normal cluster for later runs: a plain run changes nothing either.
      const plain = await bootstrap(['--until', LAST], { stateDir, inventory, timeoutMs: LONG });
      expect(plain.code, plain.stdout.slice(-2000)).toBe(0);
      expect(plain.stdout).toMatch(/^\d+ ok, 0 changed/m);
      // Behind a bastion the run ends by saying where the kubeconfig is and how to reach the API from here.
      expect(plain.stdout).toContain(
        `kubeconfig: ${join(envState, 'kubeconfig')} (the API is behind the bastion ${OUTSIDE.bastion}; the tunnel to open and how to dial it are at the top of the file)`,
      );
      const r = await block('confirm');
      expect(r.code, r.stderr).toBe(0);
      for (const s of SERVERS) expect(r.stdout).toContain(`${s} voter=True`);
    },
    LONG,
  );

  it(
    'a backup whose manifest names an object the snapshot lacks → RESTORE_INCOMPLETE naming it',
    async () => {
      const [backup] = listBackups(envState);
      const copy = join(mkdtempSync(join(tmpdir(), 'dr-backups-')), 'extra');
      cpSync(backup.dir, copy, { recursive: true });
      const manifest = JSON.parse(readFileSync(join(copy, 'manifest.json'), 'utf8'));
      manifest.objects.push(`ConfigMap/${NS}/never-existed`);
      writeFileSync(join(copy, 'manifest.json'), JSON.stringify(manifest));
      // The cluster was restored from this backup's id already: no restore again, only the comparison.
      const r = await bootstrap(['--restore', copy, '--json'], { stateDir, inventory, timeoutMs: LONG });
      expect(r.code).toBe(1);
      expect(stopOf(r)).toMatchObject({
        cause: 'RESTORE_INCOMPLETE',
        host: 'k3s-lab-1',
        message: `1 of the backup's ${manifest.objects.length} objects are missing after the restore`,
      });
      expect(stopOf(r).evidence.excerpt).toBe(`ConfigMap/${NS}/never-existed`);
      expect(r.events.filter((e) => e.type === 'step-end' && e.status === 'changed')).toEqual([]);
      rmSync(copy, { recursive: true, force: true });
    },
    LONG,
  );

  it(
    'behind the bastion, --remove of the agent: its Node and node-password Secret gone through a server, k3s stopped and wiped on it; a rerun without it changes nothing',
    async () => {
      const removal = await bootstrap(['--remove', AGENT, '--json'], { stateDir, inventory, timeoutMs: LONG });
      expect(removal.code, removal.stdout.slice(-2000)).toBe(0);
      expect(removal.events.filter((e) => e.type === 'step-start' && e.step === 'remove-node').map((e) => e.host)).toEqual([AGENT]);
      const names = (await hostExec('k3s-lab-1', "k3s kubectl get nodes -o jsonpath='{.items[*].metadata.name}'")).stdout.trim().split(/\s+/);
      expect(names.sort()).toEqual(SERVERS);
      const secrets = (await hostExec('k3s-lab-1', "k3s kubectl get secrets -n kube-system -o jsonpath='{.items[*].metadata.name}'")).stdout;
      expect(secrets).not.toContain(`${AGENT}.node-password.k3s`);
      expect(await k3sLeftOn(AGENT)).toEqual(['inactive', 'inactive']);
      // The inventory without it: a plain run changes nothing.
      const inv = parse(readFileSync(inventory, 'utf8'));
      inv.agents = [];
      writeFileSync(inventory, stringify(inv));
      const after = await bootstrap(['--until', LAST], { stateDir, inventory, timeoutMs: LONG });
      expect(after.code, after.stdout.slice(-2000)).toBe(0);
      expect(after.stdout).toMatch(/^\d+ ok, 0 changed/m);
    },
    LONG,
  );

  it(
    'behind the bastion, --reset --yes takes the cluster down: nothing of k3s left on any server, the token moved aside',
    async () => {
      const r = await bootstrap(['--reset', '--yes'], { stateDir, inventory, timeoutMs: LONG });
      expect(r.code, r.stdout.slice(-2000)).toBe(0);
      for (const s of SERVERS) expect(await k3sLeftOn(s), s).toEqual(['inactive', 'inactive']);
      expect(existsSync(join(envState, 'cluster-token.json'))).toBe(false);
      expect(readdirSync(envState).filter((f) => f.startsWith('cluster-token.json.reset-'))).toHaveLength(1);
    },
    LONG,
  );
});
