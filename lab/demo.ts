// `npm run demo`: the main job on the local lab — boot the lab, build the cluster from cold with the
// normal output, prove it highly available with `bootstrap verify lab --drill`, then end with a summary:
// what was built, how long each phase took, the drill's failover time, how to look around and tear down.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { allPhases, validatedOrder } from '../phases/index.ts';
import type { EngineEvent } from '../src/engine/events.ts';
import { summaryLine } from '../src/engine/events.ts';
import { formatDuration } from '../src/view/format.ts';
import { plainRenderer } from '../src/view/plain.ts';
import { down, hostExec, requireLab, up } from './api.ts';
import { stateDirFor } from '../src/engine/state-dir.ts';
import { chartMissing } from './cilium-chart.ts';
import { labInstance, NET, paths } from './config.ts';
import { LabUnavailable } from './errors.ts';

const REPO_ROOT = join(import.meta.dirname, '..');
const say = (line: string) => process.stdout.write(`${line}\n`);

interface CliRun {
  code: number | null;
  durations: Record<string, number>;
  summary: string;
  checks: Extract<EngineEvent, { type: 'check' }>[];
}

export async function main(): Promise<number> {
  // Before anything is booted or torn down: the build's Cilium phase needs the real chart.
  const missing = chartMissing(paths);
  if (missing) {
    process.stderr.write(`demo: ${missing}\n`);
    return 1;
  }
  try {
    requireLab();
  } catch (err) {
    if (err instanceof LabUnavailable) {
      process.stderr.write(`demo: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const t0 = Date.now();
  // A second lab on this machine (BOOTSTRAP_LAB_INSTANCE) has its own state, and its commands need the variable.
  const instance = labInstance();
  const labCmd = instance === 0 ? 'npm run lab --' : `BOOTSTRAP_LAB_INSTANCE=${instance} npm run lab --`;
  say('== 1. the lab: Debian hosts in network namespaces (systemd, sshd, etcd)');
  // From cold: a lab left by an earlier demo or test is replaced by fresh hosts (new disks, new host keys).
  await down();
  const lab = await up({ servers: 3, log: (l) => say(`   ${l}`) });
  say(`   ${lab.hosts.map((h) => `${h.name} ${h.address}`).join(', ')}; inventory ${lab.inventory}`);

  // Every phase that is built runs; a phase still declared as pending is named, not faked.
  const phases = validatedOrder(allPhases());
  const built = phases.filter((p) => !p.pending);
  const pending = phases.filter((p) => p.pending).map((p) => p.id);
  const last = built.at(-1)!.id;
  say(`\n== 2. bootstrap lab --until ${last}  (from cold, the operator's command)`);
  if (pending.length) say(`   not built yet, so not run: ${pending.join(', ')}`);
  // The environment's state (token, kubeconfig, journal, logs) starts cold too: a new cluster, a new token.
  // The default lab uses the operator's default state folder, so `bootstrap lab`, `verify lab` and `backup lab`
  // need no flag afterwards; a second lab on this machine keeps its own (its environment is also `lab`).
  const stateEnv: Record<string, string> =
    instance === 0 ? {} : { BOOTSTRAP_STATE_DIR: process.env.BOOTSTRAP_STATE_DIR ?? join(paths.stateDir, 'bootstrap-state') };
  const envState = stateDirFor('lab', { ...process.env, ...stateEnv });
  rmSync(envState, { recursive: true, force: true });
  mkdirSync(dirname(envState), { recursive: true, mode: 0o700 });
  // The inventory `lab up` wrote: every section, the GitOps fixture repository on the lab's git server.
  const inventory = lab.inventory;
  // The CLI's default for environment `lab`, run from the repository: inventory/lab.yaml needs no flag.
  const flags = inventory === join(REPO_ROOT, 'inventory', 'lab.yaml') ? [] : ['--inventory', inventory];
  const build = await runBootstrap(['lab', ...flags, '--until', last, '--json'], stateEnv);
  if (build.code !== 0) {
    say(`\ndemo: the build stopped (exit ${build.code}); the cause is above.`);
    return build.code ?? 1;
  }

  say('\n== 3. bootstrap verify lab --drill  (stop k3s on the VIP holder: the VIP must move, the server rejoin)');
  const verify = await runBootstrap(['verify', 'lab', ...flags, '--drill', '--json'], stateEnv);
  if (verify.code !== 0) {
    say(`\ndemo: verify stopped (exit ${verify.code}); the cause is above.`);
    return verify.code ?? 1;
  }
  const drill = verify.checks.find((c) => c.check === 'failover-drill');

  say('\n== 4. summary');
  say('   what was built:');
  const founder = lab.hosts[0].name;
  const nodes = await hostExec(
    founder,
    `k3s kubectl get nodes -o custom-columns='NODE:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,ETCD VOTER:.status.conditions[?(@.type=="EtcdIsVoter")].status'`,
  );
  for (const line of nodes.stdout.trim().split('\n')) say(`   ${line}`);
  const lease = await hostExec(founder, "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'; true");
  say(`   control-plane VIP ${NET.vip} announced by: ${lease.stdout.trim() || '(no holder)'}`);
  const agents = await hostExec(
    founder,
    `k3s kubectl get pods -n kube-system -l k8s-app=cilium -o custom-columns='CILIUM AGENT:.metadata.name,NODE:.spec.nodeName,KUBERNETES_SERVICE_HOST:.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_HOST")].value'; true`,
  );
  for (const line of agents.stdout.trim().split('\n')) say(`   ${line}`);
  // Once the build hands the cluster to Flux: what Flux applies from the GitOps repository, at which revision.
  if ('flux' in build.durations) {
    const flux = await hostExec(
      founder,
      `k3s kubectl get kustomizations.kustomize.toolkit.fluxcd.io -A -o custom-columns='FLUX KUSTOMIZATION:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,REVISION:.status.lastAppliedRevision'; true`,
    );
    for (const line of flux.stdout.trim().split('\n')) say(`   ${line}`);
  }
  say('\n   phase durations:');
  for (const [phase, ms] of Object.entries(build.durations)) say(`   ${phase.padEnd(15)} ${formatDuration(ms)}`);
  say(`   ${'total'.padEnd(15)} ${formatDuration(Date.now() - t0)} (lab, build and drill)`);
  say(`   build: ${build.summary}`);
  say(`\n   failover drill: ${drill ? drill.detail : 'no drill result was reported'}`);
  const kubeconfig = join(envState, 'kubeconfig');
  say('\n   look around:');
  say(`   ${labCmd} status`);
  say(`   ${labCmd} ssh k3s-lab-1 sudo k3s kubectl get nodes`);
  // The fetched admin kubeconfig dials the VIP, which this machine reaches on the lab's bridge.
  if (existsSync(kubeconfig)) {
    if (hasKubectl()) {
      say(`   kubectl --kubeconfig ${kubeconfig} get nodes`);
      if ('flux' in build.durations) say(`   kubectl --kubeconfig ${kubeconfig} get kustomizations,helmreleases -A`);
    } else say(`   admin kubeconfig (0600, dials the VIP ${NET.vip}): ${kubeconfig}  (no kubectl on this machine)`);
  }
  // The operator's own next commands, as they type them: the same inventory, the same state folder.
  const cmd = (...args: string[]) => [...Object.entries(stateEnv).map(([k, v]) => `${k}=${v}`), 'npx bootstrap', ...args, ...flags].join(' ');
  const until = last === phases.at(-1)!.id ? [] : ['--until', last];
  say(`   ${cmd('lab', ...until)}   # a second run: 0 changed`);
  say(`   ${cmd('verify', 'lab')}`);
  say(`   ${cmd('backup', 'lab')}   # an etcd snapshot into the state folder's backups`);
  say(`   ${labCmd} down   # tear everything down`);
  return 0;
}

function hasKubectl(): boolean {
  return spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
}

/** Runs the real CLI; its JSON events are shown through the plain view, timed per phase, and kept for the summary. */
function runBootstrap(args: string[], stateEnv: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/bootstrap.js'), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...stateEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    // The renderer writes a change's detail (an action's commands) as one multi-line block: indent every line.
    const view = plainRenderer((block) => {
      for (const l of block.split('\n')) say(`   ${l}`);
    });
    const run: CliRun = { code: null, durations: {}, summary: '', checks: [] };
    let pending = '';
    child.stdout.on('data', (d: Buffer) => {
      pending += d;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const e = JSON.parse(line) as EngineEvent;
        view(e);
        if (e.type === 'phase-end') run.durations[e.phase] = e.durationMs;
        if (e.type === 'check') run.checks.push(e);
        if (e.type === 'run-end') run.summary = summaryLine(e.summary);
      }
    });
    child.on('close', (code) => resolve({ ...run, code }));
  });
}
