// The backup memory figure (issue 12: backing up a 1 GiB snapshot keeps the engine's RSS under 200 MB):
// a root-only file of that size behind a real sshd on loopback, copied by the engine's backup code
// (src/backup/pull.ts: sudo cat, streamed, hashed, checked against the server's sha256, fsynced into the
// backup folder) in a Node process of its own, whose peak RSS is the figure. test/ssh/backup-memory.test.ts
// holds the engine to it in CI; `npm run bench` (lab/bench.ts) prints it.
//
// Run as a script (`node --import tsx test/support/backup-memory.ts '<json>'`) this file is that measured
// process: it copies the snapshot and prints one JSON line.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pullSnapshot } from '../../src/backup/pull.ts';
import { PendingBackup } from '../../src/backup/store.ts';
import { SshTransport } from '../../src/transport/ssh.ts';
import type { SshTarget } from '../../src/transport/types.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir } from './sshd.ts';

export const SNAPSHOT_BYTES = 1024 * 1024 * 1024;
export const RSS_TARGET_MB = 200;

export interface BackupMemory {
  /** Bytes copied into the backup folder (the engine checked them against the server's size and sha256). */
  bytes: number;
  ms: number;
  /** The measured process's peak resident set, in MB (10^6 bytes). */
  maxRssMB: number;
}

/**
 * Backs up a `bytes` snapshot from a real sshd on `address` in a process of its own and returns its figure;
 * throws with the child's output when the copy failed. The snapshot is a sparse file (zeros): every byte
 * still travels through sshd, the SSH channel and the engine's stream into the backup folder.
 */
export async function measureBackupMemory(address: string, bytes = SNAPSHOT_BYTES): Promise<BackupMemory> {
  ensureTestUsers();
  const tmp = tempDir('bootstrap-backup-memory-');
  const sshd = await startSshd({ address, authorizedKeys: [makeKeypair(tmp.dir, 'id_ed25519').publicKey] });
  try {
    const knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
    const target: SshTarget = {
      name: 'backup-1',
      address: sshd.address,
      port: sshd.port,
      user: OPS_USER,
      identityFile: join(tmp.dir, 'id_ed25519'),
      knownHostsFile: knownHosts,
    };
    const snapshot = join(tmp.dir, 'server', 'snapshot');
    mkdirSync(join(tmp.dir, 'server'), { mode: 0o700 }); // root's: only sudo reads it, as k3s's snapshots
    execFileSync('truncate', ['-s', String(bytes), snapshot]);
    execFileSync('chmod', ['0600', snapshot]);
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', import.meta.filename, JSON.stringify({ target, snapshot, stateDir: join(tmp.dir, 'state'), home: tmp.dir })],
      { encoding: 'utf8' },
    );
    const last = child.stdout.trim().split('\n').at(-1) ?? '';
    const result = child.status === 0 && last.startsWith('{') ? (JSON.parse(last) as BackupMemory) : undefined;
    if (!result || result.bytes !== bytes)
      throw new Error(`the backup of ${bytes} bytes failed or did not match (exit ${child.status}):\n${(child.stdout + child.stderr).slice(-2000)}`);
    return result;
  } finally {
    await sshd.stop();
    tmp.remove();
  }
}

/** The measured process: copy the snapshot as `bootstrap backup` does, print one JSON line with its peak RSS. */
async function backupChild(arg: string): Promise<void> {
  const { target, snapshot, stateDir, home } = JSON.parse(arg) as { target: SshTarget; snapshot: string; stateDir: string; home: string };
  const transport = new SshTransport({ authSock: null, home });
  const remote = await transport.connect(target);
  try {
    const t0 = Date.now();
    const pending = new PendingBackup(stateDir, 'measure');
    const pulled = await pullSnapshot(remote, snapshot, pending.snapshotSink());
    pending.commit(
      {
        id: 'measure',
        env: 'measure',
        takenAt: new Date().toISOString(),
        k3sVersion: '',
        snapshotServer: target.name,
        servers: [target.name],
        snapshotName: 'measure',
        sha256: pulled.sha256,
        bytes: pulled.bytes,
        objects: [],
        counts: {},
      },
      { secret: 'measure' },
    );
    const ms = Date.now() - t0;
    // maxRSS is in KiB: the most this process held in memory at any point of the copy.
    const maxRssMB = (process.resourceUsage().maxRSS * 1024) / 1e6;
    process.stdout.write(JSON.stringify({ bytes: pulled.bytes, ms, maxRssMB } satisfies BackupMemory) + '\n');
  } finally {
    await remote.close();
    await transport.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await backupChild(process.argv[2]);
