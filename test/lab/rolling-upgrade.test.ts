// Day 2 on a running cluster (3 servers and an agent, Cilium up): a new k3s.version rolls through it one
// server at a time, the VIP holder last, each drained first and gated after; refusals come before anything
// changes. In order, on one cluster: the plan in --check; an unsafe path refused; a quorum refusal with a
// server down; a drain blocked by a PodDisruptionBudget (named, the node uncordoned) and --resume after it;
// a minor upgrade measured from the operator's side (the API through the VIP every 200 ms, the servers every
// second); a rerun that changes nothing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { beforeAll, expect, it } from 'vitest';
import { inventoryAtRelease } from '../../lab/release-inventory.ts';
import { NET } from '../../lab/config.ts';
import { watchApi } from '../support/api-probe.ts';
import { DRAIN_ROW_SECONDS, FAULT_ROWS } from '../support/fault-matrix.ts';
import { runFaultRow, type Injection } from '../support/fault-run.ts';
import { bootstrap, freshStateDir, resetCluster, stopOf, stopsOf, type BootstrapRun } from '../support/cluster.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hostExec, hosts } from '../support/lab.ts';
import { labInventory } from '../support/lab-inventory.ts';

const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
const AGENT = 'k3s-lab-agent-1';
const STEP = 'v1.33.7+k3s3';
const MINOR = 'v1.34.1+k3s1';

const inventoryAt = inventoryAtRelease;

/** The inventory `file` with k3s.drainSeconds set (a drain budget the operator chose), written in place. */
function withDrainSeconds(file: string, seconds: number): string {
  const inv = parse(readFileSync(file, 'utf8'));
  inv.k3s.drainSeconds = seconds;
  writeFileSync(file, stringify(inv));
  return file;
}

const sha = async (h: string) => (await hostExec(h, 'sha256sum /usr/local/bin/k3s | cut -c1-64')).stdout.trim();
const shas = () => Promise.all([...SERVERS, AGENT].map(sha));
/** `k3s kubectl` on the first server where it succeeds (a server may be in the middle of its restart); else the last answer. */
async function kubectl(args: string) {
  let last: Awaited<ReturnType<typeof hostExec>> | undefined;
  for (const server of SERVERS) {
    last = await hostExec(server, `k3s kubectl ${args}`, { allowFail: true });
    if (last.code === 0) return last;
  }
  return last!;
}
const unschedulable = async () => (await kubectl(`get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.spec.unschedulable}{"\\n"}{end}'`)).stdout;
const versions = async () =>
  (await kubectl(`get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.nodeInfo.kubeletVersion}{"\\n"}{end}'`)).stdout.trim().split('\n').sort();

const WORKLOAD = (minAvailable: number) => `apiVersion: v1
kind: Namespace
metadata: { name: rolling }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: rolling }
spec:
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: web, image: registry.k8s.io/pause:3.10 }]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: { name: web, namespace: rolling }
spec:
  minAvailable: ${minAvailable}
  selector: { matchLabels: { app: web } }
`;

async function applyWorkload(minAvailable: number): Promise<void> {
  const r = await kubectl(`apply -f - <<'EOF'\n${WORKLOAD(minAvailable)}EOF`);
  expect(r.code, r.stderr).toBe(0);
}

/** The workload whole again: its 2 pods Ready (a pod evicted from the last node drained is replaced within seconds). */
async function workloadReady(): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const ready = (await kubectl("-n rolling get deployment web -o jsonpath='{.status.readyReplicas}'")).stdout.trim();
    if (ready === '2') return;
    if (Date.now() - t0 > 60_000) expect(ready, 'the workload has 2 Ready pods again within 60 s').toBe('2');
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

const ended = (r: BootstrapRun, phase: string) => r.events.filter((e) => e.type === 'step-end' && e.phase === phase);

describeAsRoot('a rolling upgrade of a running cluster', () => {
  const stateDir = freshStateDir();
  let base: string;

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    base = labInventory();
    const built = await bootstrap(['--until', 'cilium'], { stateDir, inventory: base });
    expect(built.code, built.stdout.slice(-3000) + built.stderr).toBe(0);
  }, 900_000);

  it('plans the whole rolling change in --check: the holder last, the backup first, each server drained, restarted and gated', async () => {
    const before = await shas();
    const r = await bootstrap(['--check', '--json', '--until', 'cilium'], { stateDir, inventory: inventoryAt(base, STEP) });
    expect(r.code, r.stdout.slice(-2000)).toBe(2);
    const rolled = ended(r, 'rolling-servers').filter((e) => e.step === 'rolling');
    const holder = (await kubectl("get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
    expect(rolled.map((e) => e.host).at(-1)).toBe(holder);
    expect(rolled.map((e) => e.host).sort()).toEqual(SERVERS);
    const first = rolled[0].changes.map((c: any) => c.summary);
    expect(first[0]).toContain('the others hold quorum');
    expect(first[1]).toContain('back up the cluster before the rolling change');
    expect(first[2]).toContain('cordoned and drained');
    expect(first.some((s: string) => s.startsWith('upload '))).toBe(true);
    expect(first.at(-1)).toContain('restart k3s');
    expect(rolled[1].changes.map((c: any) => c.summary).slice(0, 2)).toEqual([
      expect.stringContaining('the others hold quorum'),
      expect.stringContaining('the node cordoned and drained'),
    ]);
    expect(rolled.at(-1).changes[1].summary).toContain('the VIP handed over');
    const agent = ended(r, 'rolling-agents').find((e) => e.step === 'rolling');
    expect(agent.changes[1].summary).toContain('cordoned and drained');
    expect(await shas()).toEqual(before);
  }, 300_000);

  it('refuses a release with etcd 3.6 while the servers run etcd 3.5.21, before anything changes (ETCD_WAYPOINT_REQUIRED)', async () => {
    const before = await shas();
    const r = await bootstrap(['--json', '--until', 'cilium'], { stateDir, inventory: inventoryAt(base, MINOR) });
    expect(r.code).toBe(1);
    expect(stopOf(r)).toMatchObject({ cause: 'ETCD_WAYPOINT_REQUIRED' });
    expect(stopOf(r).message).toContain('v1.33.7+k3s3 or later');
    expect(await shas()).toEqual(before);
  }, 300_000);

  it('restarts no running node outside the rolling change: --only agents, --only k3s-join stop with RESTART_NEEDS_ROLLING, nothing changed, check mode too', async () => {
    const before = await shas();
    for (const [phase, host] of [
      ['agents', AGENT],
      ['k3s-join', 'k3s-lab-2'],
    ])
      for (const check of [['--check'], []]) {
        const r = await bootstrap([...check, '--only', phase, '--json'], { stateDir, inventory: inventoryAt(base, STEP) });
        expect(r.code, r.stdout.slice(-2000)).toBe(1);
        expect(stopOf(r)).toMatchObject({ cause: 'RESTART_NEEDS_ROLLING', host });
        expect(stopOf(r).message).toContain('binary (/usr/local/bin/k3s)');
      }
    expect(await shas()).toEqual(before);
  }, 300_000);

  it('refuses with a server down (QUORUM_AT_RISK), nothing changed on any host, check mode too', async () => {
    const before = await shas();
    await hostExec('k3s-lab-3', 'systemctl stop k3s');
    try {
      for (const args of [['--check'], []]) {
        const r = await bootstrap([...args, '--json', '--until', 'cilium'], { stateDir, inventory: inventoryAt(base, STEP) });
        expect(r.code).toBe(1);
        expect(stopsOf(r).map((s) => s.cause)).toContain('QUORUM_AT_RISK');
        expect(stopsOf(r).find((s) => s.cause === 'QUORUM_AT_RISK').host).toBe('k3s-lab-3');
      }
      expect(await shas()).toEqual(before);
      expect(await unschedulable()).not.toContain('=true');
    } finally {
      await hostExec('k3s-lab-3', 'systemctl start --no-block k3s');
    }
    // Back as a serving voter before the next test rolls through it.
    const t0 = Date.now();
    while ((await hostExec('k3s-lab-3', "k3s kubectl get --raw='/readyz'", { allowFail: true })).stdout.trim() !== 'ok') {
      if (Date.now() - t0 > 180_000) throw new Error('k3s-lab-3 did not come back');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }, 600_000);

  it('fault row upgrade-drain-blocked: a PodDisruptionBudget refuses the next drain (DRAIN_BLOCKED, named, the node uncordoned, its k3s untouched); --resume goes on', async () => {
    await applyWorkload(1);
    const row = FAULT_ROWS.find((r) => r.id === 'upgrade-drain-blocked')!;
    const inventory = withDrainSeconds(inventoryAt(base, STEP), DRAIN_ROW_SECONDS);
    let before: string[] = [];
    let afterStop: string[] = [];
    const how: Injection = {
      inject: async () => {
        before = await shas();
        await applyWorkload(2);
      },
      heal: async () => {
        afterStop = await shas();
        await applyWorkload(1);
      },
    };
    const { stopped, rerun } = await runFaultRow(row, how, { stateDir, inventory }, { timeoutMs: 1_200_000 });
    const stop = stopOf(stopped);
    expect(stop.message).toMatch(/rolling\/web-[\w-]+/);
    expect(stop.message).toContain('rolling/web');
    expect(`${stop.evidence.seen}`).toContain("Cannot evict pod as it would violate the pod's disruption budget.");
    // The blocked node: uncordoned, its k3s as it was when the fault went in.
    const at = [...SERVERS, AGENT].indexOf(stop.host);
    expect(at).toBeGreaterThanOrEqual(0);
    expect(afterStop[at]).toBe(before[at]);
    // The --resume did not touch the server the stopped run had finished again.
    const first = ended(stopped, 'rolling-servers').find((e) => e.step === 'rolling' && e.status === 'changed')!.host;
    const resumed = (rerun as BootstrapRun).events.filter((e) => e.type === 'step-end' && e.phase === 'rolling-servers' && e.host === first);
    expect(resumed.map((e) => e.status)).toEqual(expect.arrayContaining(['skipped']));
    // Nothing lost: every node on the new release and schedulable, the workload's two pods Ready.
    expect(await versions()).toEqual([...SERVERS, AGENT].map((h) => `${h}=${STEP}`).sort());
    expect(await unschedulable()).not.toContain('=true');
    await workloadReady();
  }, 1_500_000);

  it('fault row upgrade-etcd-member-killed: QUORUM_AT_RISK before anything changed; the rerun upgrades a minor release with the API answering through the VIP and the servers never below quorum; a rerun after it changes nothing', async () => {
    const row = FAULT_ROWS.find((r) => r.id === 'upgrade-etcd-member-killed')!;
    const inventory = inventoryAt(base, MINOR);
    let before: string[] = [];
    let watched: Awaited<ReturnType<ReturnType<typeof watchApi>['stop']>> | undefined;
    let upgrade: BootstrapRun | undefined;
    const timeline: string[] = [];
    const how: Injection = {
      inject: async () => {
        before = await shas();
        await hostExec('k3s-lab-3', 'systemctl kill --signal=SIGKILL k3s.service; systemctl stop k3s.service; pkill -9 -x etcd; true');
      },
      heal: async () => {
        await hostExec('k3s-lab-3', 'systemctl start --no-block k3s.service');
        const t0 = Date.now();
        while ((await hostExec('k3s-lab-3', "k3s kubectl get --raw='/readyz'", { allowFail: true })).stdout.trim() !== 'ok') {
          if (Date.now() - t0 > 180_000) throw new Error('k3s-lab-3 did not come back');
          await new Promise((r) => setTimeout(r, 2_000));
        }
      },
      rerun: async (env, args) => {
        // Nothing changed by the stopped run: every binary as it was, no node cordoned.
        expect(await shas()).toEqual(before);
        expect(await unschedulable()).not.toContain('=true');
        const watch = watchApi(
          join(stateDir, 'lab', 'kubeconfig'),
          NET.vip,
          hosts()
            .filter((h) => SERVERS.includes(h.name))
            .map((h) => h.address),
        );
        // When each server's change and gate began and ended, on the watch's clock, to set beside what it saw.
        const t0 = Date.now();
        const onEvent = (e: any) => {
          if (e.phase === 'rolling-servers' && /^(step|gate)-(start|end)$/.test(e.type))
            timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)} s ${e.host} ${e.type} ${e.step ?? e.gate}`);
        };
        upgrade = await bootstrap(args, { stateDir: env.stateDir, inventory: env.inventory, timeoutMs: 1_200_000, onEvent });
        watched = await watch.stop();
        return upgrade;
      },
    };
    await runFaultRow(row, how, { stateDir, inventory }, { timeoutMs: 1_200_000 });
    const seen = watched!;
    const perHost = ended(upgrade!, 'rolling-servers')
      .concat(ended(upgrade!, 'rolling-agents'))
      .filter((e) => e.step === 'rolling' && e.status === 'changed')
      .map((e) => `${e.host} ${(e.durationMs / 1000).toFixed(1)} s`);
    process.stdout.write(
      `rolling upgrade to ${MINOR}: ${seen.probes} probes through the VIP, ${seen.failed} failed, longest gap ${(seen.longestGapMs / 1000).toFixed(1)} s; ` +
        `most servers down at once ${seen.mostDown}, fewest serving ${seen.fewestServing} of ${SERVERS.length} (${seen.samples} samples); per host (drain, restart): ${perHost.join(', ')}; ` +
        `the watcher's timers at most ${seen.watcherLateMs} ms late\n`,
    );
    const story = `\nthe rolling change: ${timeline.join('; ')}`;
    expect(await versions()).toEqual([...SERVERS, AGENT].map((h) => `${h}=${MINOR}`).sort());
    // Never two of the three servers down (refusing connections) at once; how many answered ok is printed.
    expect(seen.mostDown, `servers down ${seen.mostDownSeen}; fewest serving ${seen.fewestSeen}${story}`).toBeLessThanOrEqual(1);
    expect(seen.longestGapMs, `longest gap through the VIP ${seen.longestGapSeen}${story}`).toBeLessThanOrEqual(2_000);
    await workloadReady();

    const again = await bootstrap(['--json', '--until', 'cilium'], { stateDir, inventory });
    expect(again.code).toBe(0);
    expect(again.events.find((e) => e.type === 'run-end').summary.changed).toBe(0);
  }, 1_800_000);
});
