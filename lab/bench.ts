// `npm run bench`: speed and memory targets, measured rather than asserted in tests.
// Targets: a converged no-op run of the whole built DAG on 3 servers of the lab in under 5 s, the
// whole command from process start to exit (one SSH connection per host, batched probes); and a backup
// of a 1 GiB snapshot that keeps the engine's RSS under 200 MB (the snapshot streams to disk), measured
// against a real OpenSSH server on loopback; and `bootstrap --help` from process start to exit in 0.3 s at
// most (issue 17: the bundle `npm ci` builds; `npm run bench -- startup` measures it alone, without the lab).
// A missed memory or startup target fails the bench.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pullSnapshot } from '../src/backup/pull.ts';
import { PendingBackup } from '../src/backup/store.ts';
import { SshTransport } from '../src/transport/ssh.ts';
import type { SshTarget } from '../src/transport/types.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir } from '../test/support/sshd.ts';
import { buildBundle, helpTimes, median, STARTUP_TARGET_MS } from '../test/support/startup.ts';
import { allPhases, validatedOrder } from '../phases/index.ts';
import { down, requireLab, up } from './api.ts';
import { labInventoryWithGitops } from './gitops-inventory.ts';

const REPO_ROOT = join(import.meta.dirname, '..');
const RUNS = 5;
const TARGET_MS = 5_000;

function bootstrap(args: string[], stateDir: string): { ms: number; code: number | null; out: string } {
  const t0 = process.hrtime.bigint();
  const res = spawnSync(process.execPath, [join(REPO_ROOT, 'bin/bootstrap.js'), ...args], {
    env: { ...process.env, BOOTSTRAP_STATE_DIR: stateDir, CI: 'true' },
    encoding: 'utf8',
  });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, code: res.status, out: res.stdout + res.stderr };
}

const SNAPSHOT_BYTES = 1024 * 1024 * 1024;
const RSS_TARGET_MB = 200;

/**
 * The backup figure: a root-only 1 GiB file behind a real sshd on loopback, copied by the engine's
 * backup code (src/backup/pull.ts: sudo cat, streamed, hashed, fsynced) in a process of its own, whose
 * peak RSS is the figure. Returns whether it meets the target.
 */
async function backupRss(): Promise<boolean> {
  ensureTestUsers();
  const tmp = tempDir('bootstrap-bench-backup-');
  const sshd = await startSshd({ address: '127.0.0.61', authorizedKeys: [makeKeypair(tmp.dir, 'id_ed25519').publicKey] });
  try {
    const knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
    const target: SshTarget = {
      name: 'bench-1',
      address: sshd.address,
      port: sshd.port,
      user: OPS_USER,
      identityFile: join(tmp.dir, 'id_ed25519'),
      knownHostsFile: knownHosts,
    };
    const snapshot = join(tmp.dir, 'server', 'snapshot');
    mkdirSync(join(tmp.dir, 'server'), { mode: 0o700 }); // root's: only sudo reads it, as k3s's snapshots
    execFileSync('sh', ['-c', `head -c ${SNAPSHOT_BYTES} /dev/urandom > ${snapshot} && chmod 0600 ${snapshot}`]);
    const expected = execFileSync('sha256sum', [snapshot], { encoding: 'utf8' }).split(/\s+/)[0];
    const child = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'bin/bench.js'), '--backup-child', JSON.stringify({ target, snapshot, stateDir: join(tmp.dir, 'state'), home: tmp.dir })],
      { encoding: 'utf8' },
    );
    const result =
      child.status === 0 ? (JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { sha256: string; bytes: number; ms: number; maxRssMB: number }) : undefined;
    if (!result || result.sha256 !== expected || result.bytes !== SNAPSHOT_BYTES) {
      process.stderr.write(`bench: the 1 GiB backup failed or did not match (exit ${child.status}):\n${(child.stdout + child.stderr).slice(-2000)}\n`);
      return false;
    }
    const meets = result.maxRssMB < RSS_TARGET_MB;
    const rate = SNAPSHOT_BYTES / 1024 / 1024 / (result.ms / 1000);
    process.stdout.write(
      `${'backup of 1 GiB'.padEnd(20)} peak RSS ${result.maxRssMB.toFixed(0)} MB, copied in ${(result.ms / 1000).toFixed(1)} s (${rate.toFixed(0)} MiB/s, sshd on loopback) — ${meets ? 'meets' : 'MISSES'} the ${RSS_TARGET_MB} MB target\n`,
    );
    return meets;
  } finally {
    await sshd.stop();
    tmp.remove();
  }
}

const STARTUP_RUNS = 7;

/**
 * The startup figure: the bundle built as `npm ci` builds it (the `prepare` script, into a folder of its own,
 * so the figure is of the sources as they are), then `bootstrap --help` through bin/bootstrap.js, from process
 * start to exit. The figure is the median wall clock; the fastest run and the median CPU time are printed
 * beside it (on a loaded machine the wall clock measures the neighbours too). Returns whether it meets the target.
 */
export function startup(): boolean {
  const bundle = buildBundle();
  try {
    const { wall, cpu } = helpTimes(bundle.dir, STARTUP_RUNS);
    const meets = median(wall) <= STARTUP_TARGET_MS;
    const s = (ms: number) => (ms / 1000).toFixed(2);
    process.stdout.write(
      `${'bootstrap --help'.padEnd(20)} median ${s(median(wall))} s, min ${s(wall[0])} s, max ${s(wall.at(-1)!)} s over ${STARTUP_RUNS} runs (CPU: median ${s(median(cpu))} s) — ${meets ? 'meets' : 'MISSES'} the ${STARTUP_TARGET_MS / 1000} s target\n`,
    );
    return meets;
  } finally {
    bundle.remove();
  }
}

/** The measured process of the backup figure: copy the snapshot, print one JSON line with its peak RSS. */
export async function backupChild(arg: string): Promise<number> {
  const { target, snapshot, stateDir, home } = JSON.parse(arg) as { target: SshTarget; snapshot: string; stateDir: string; home: string };
  const transport = new SshTransport({ authSock: null, home });
  const remote = await transport.connect(target);
  try {
    const t0 = Date.now();
    const pending = new PendingBackup(stateDir, 'bench');
    const pulled = await pullSnapshot(remote, snapshot, pending.snapshotSink());
    const dir = pending.commit(
      {
        id: 'bench',
        env: 'bench',
        takenAt: new Date().toISOString(),
        k3sVersion: '',
        snapshotServer: target.name,
        servers: [target.name],
        snapshotName: 'bench',
        sha256: pulled.sha256,
        bytes: pulled.bytes,
        objects: [],
        counts: {},
      },
      { secret: 'bench' },
    );
    const ms = Date.now() - t0;
    // maxRSS is in KiB: the most this process held in memory at any point of the copy.
    const maxRssMB = (process.resourceUsage().maxRSS * 1024) / 1e6;
    process.stdout.write(JSON.stringify({ ...pulled, ms, maxRssMB, dir }) + '\n');
    return 0;
  } finally {
    await remote.close();
    await transport.close();
  }
}

export async function main(): Promise<number> {
  requireLab();
  const startupMeets = startup();
  const backupMeets = await backupRss();
  // From cold, as the demo: fresh hosts, so the measured runs are of this build alone.
  await down();
  await up({ servers: 3 });
  const last = validatedOrder(allPhases())
    .filter((p) => !p.pending)
    .at(-1)!.id;
  const inventory = labInventoryWithGitops();
  const stateDir = mkdtempSync(join(tmpdir(), 'bootstrap-bench-'));
  const args = ['lab', '--inventory', inventory, '--until', last];
  const build = bootstrap(args, stateDir);
  if (build.code !== 0) {
    process.stderr.write(`bench: the build failed:\n${build.out.slice(-3000)}\n`);
    return 1;
  }
  process.stdout.write(`built the lab cluster (--until ${last}) in ${(build.ms / 1000).toFixed(1)} s\n`);
  for (const [label, extra] of [
    ['converged run', []],
    ['converged --check', ['--check']],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = bootstrap([...args, ...extra], stateDir);
      if (r.code !== 0 || !/ 0 (changed|would change)/.test(r.out)) {
        process.stderr.write(`bench: ${label} was not a no-op:\n${r.out.slice(-2000)}\n`);
        return 1;
      }
      times.push(r.ms);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    const verdict = median < TARGET_MS ? 'meets' : 'MISSES';
    process.stdout.write(
      `${label.padEnd(20)} median ${(median / 1000).toFixed(2)} s, min ${(times[0] / 1000).toFixed(2)} s, max ${(times.at(-1)! / 1000).toFixed(2)} s over ${RUNS} runs — ${verdict} the ${TARGET_MS / 1000} s target\n`,
    );
  }
  return backupMeets && startupMeets ? 0 : 1;
}
