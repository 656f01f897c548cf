// The environment's backup folder on the operator's machine: <state folder>/backups/<id>/ holding the
// etcd snapshot, the cluster token and manifest.json. Backups are secrets (the token, and the snapshot
// holds every Secret of the cluster): folders 0700, files 0600, the token never printed.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  close,
  closeSync,
  createReadStream,
  existsSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  write,
  writeFileSync,
} from 'node:fs';
import { Writable } from 'node:stream';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { CauseError } from '../errors.ts';
import type { ClusterToken } from '../k3s/cluster-token.ts';
import { openRegularFile, readProblem, readRegularText } from '../util/regular-file.ts';

export const SNAPSHOT_FILE = 'snapshot';
export const TOKEN_FILE = 'cluster-token.json';
export const MANIFEST_FILE = 'manifest.json';

export interface BackupManifest {
  /** The folder name: the time of the snapshot, sortable. */
  id: string;
  env: string;
  /** ISO time the snapshot was taken. */
  takenAt: string;
  k3sVersion: string;
  /** The server the snapshot was taken on, and every server of the inventory then. */
  snapshotServer: string;
  servers: string[];
  /** k3s's name for the snapshot on that server (server/db/snapshots/<name>). */
  snapshotName: string;
  sha256: string;
  bytes: number;
  /** kind/namespace/name of every API object but Pods and Events (src/backup/objects.ts). */
  objects: string[];
  counts: Record<string, number>;
}

export interface Backup {
  dir: string;
  manifest: BackupManifest;
  snapshot: string;
  tokenFile: string;
}

export const backupsDir = (stateDir: string) => join(stateDir, 'backups');

/** A backup id from a time: 2026-11-30T05-40-12Z (sortable, valid as a folder name). */
export function backupId(at: Date): string {
  return at
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
}

/**
 * A backup folder being assembled: `<id>.partial` beside its place (0700), renamed into place by
 * commit() once every file is written and synced, so a backup folder is complete or absent.
 */
export class PendingBackup {
  readonly dir: string;
  readonly tmp: string;
  private readonly root: string;

  constructor(stateDir: string, id: string) {
    this.root = backupsDir(stateDir);
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    chmodSync(this.root, 0o700);
    this.dir = join(this.root, id);
    this.tmp = `${this.dir}.partial`;
    rmSync(this.tmp, { recursive: true, force: true });
    mkdirSync(this.tmp, { mode: 0o700 });
  }

  get snapshotPath(): string {
    return join(this.tmp, SNAPSHOT_FILE);
  }

  /** A stream for the snapshot's bytes: written to its file (0600, created new) and hashed as they pass. */
  snapshotSink(): SnapshotSink {
    return new SnapshotSink(this.snapshotPath);
  }

  /** Write the token and the manifest, sync the folder, and rename it into place; returns its path. */
  commit(manifest: BackupManifest, token: ClusterToken): string {
    writeSynced(join(this.tmp, TOKEN_FILE), JSON.stringify(token));
    writeSynced(join(this.tmp, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
    syncDir(this.tmp);
    renameSync(this.tmp, this.dir);
    syncDir(this.root);
    return this.dir;
  }

  /** Remove what was written (a copy that failed or did not match the server's sha256). */
  abandon(): void {
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * Writes a snapshot to a new 0600 file as it arrives, hashing it (sha256) and counting its bytes; the
 * file is fsynced and closed before 'finish'. Memory stays at the stream's buffers whatever the size.
 */
export class SnapshotSink extends Writable {
  private fd: number | undefined;
  private readonly hash = createHash('sha256');
  bytes = 0;
  private digest: string | undefined;

  constructor(readonly path: string) {
    super({ highWaterMark: 1 << 20 });
    this.fd = openSync(path, 'wx', 0o600);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    writeAll(this.fd!, chunk, 0, done);
  }

  override _final(done: (err?: Error | null) => void): void {
    const fd = this.fd!;
    this.fd = undefined;
    this.digest = this.hash.digest('hex');
    fsync(fd, (err) => close(fd, (err2) => done(err ?? err2)));
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    const fd = this.fd;
    this.fd = undefined;
    if (fd === undefined) done(err);
    else close(fd, () => done(err));
  }

  /** The sha256 of every byte written; defined once the stream has finished. */
  get sha256(): string | undefined {
    return this.digest;
  }
}

function writeAll(fd: number, chunk: Buffer, offset: number, done: (err?: Error | null) => void): void {
  write(fd, chunk, offset, chunk.length - offset, null, (err, written) => {
    if (err) done(err);
    else if (offset + written < chunk.length) writeAll(fd, chunk, offset + written, done);
    else done();
  });
}

function writeSynced(path: string, content: string | Buffer): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeFileSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes a complete backup folder, or none, from a snapshot in memory (small snapshots, tests). */
export function writeBackup(stateDir: string, manifest: BackupManifest, snapshot: Buffer, token: ClusterToken): string {
  const pending = new PendingBackup(stateDir, manifest.id);
  writeSynced(pending.snapshotPath, snapshot);
  return pending.commit(manifest, token);
}

/** The environment's backups, oldest first. Folders without a manifest (a partial copy) are left out. */
export function listBackups(stateDir: string): Backup[] {
  const root = backupsDir(stateDir);
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => !name.endsWith('.partial') && existsSync(join(root, name, MANIFEST_FILE)))
    .sort()
    .map((name) => openBackup(join(root, name)));
}

/** `--restore ARG`: a backup folder's path, or the id of one in the environment's backup folder. */
export function resolveBackup(arg: string, stateDir: string): Backup {
  const candidates = [isAbsolute(arg) || arg.includes('/') ? resolve(arg) : join(backupsDir(stateDir), arg), resolve(arg)];
  const dir = candidates.find((d) => existsSync(join(d, MANIFEST_FILE)));
  if (!dir) {
    throw new CauseError('BACKUP_NOT_FOUND', {
      evidence: { command: `ls ${candidates[0]}`, seen: `no ${MANIFEST_FILE} in ${candidates[0]}` },
    });
  }
  return openBackup(dir);
}

function openBackup(dir: string): Backup {
  const file = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = readRegularText(file);
  } catch (err) {
    throw manifestUnreadable(file, readProblem(err));
  }
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(text) as BackupManifest;
  } catch (err) {
    throw manifestUnreadable(file, `is not JSON (torn, or not written by bootstrap backup): ${(err as Error).message}`);
  }
  const m = manifest as Partial<BackupManifest> | null;
  const fields = typeof m === 'object' && m !== null && typeof m.id === 'string' && typeof m.k3sVersion === 'string';
  if (!fields || typeof m.snapshotServer !== 'string' || typeof m.sha256 !== 'string' || typeof m.bytes !== 'number' || !Array.isArray(m.objects)) {
    throw manifestUnreadable(file, 'is JSON, but not a backup manifest (id, k3sVersion, snapshotServer, sha256, bytes, objects)');
  }
  return { dir, manifest, snapshot: join(dir, SNAPSHOT_FILE), tokenFile: join(dir, TOKEN_FILE) };
}

/** STATE_FILE_CORRUPT naming a backup's manifest.json, with what to do about that backup. */
function manifestUnreadable(file: string, problem: string): CauseError {
  const seen = `${file} ${problem}`;
  return new CauseError('STATE_FILE_CORRUPT', {
    message: `backup manifest ${seen}`,
    evidence: { command: `ls -l ${file}`, seen },
    remedy: `This folder is not a usable backup: restore another one, or move ${dirname(file)} out of the backup folder so that \`bootstrap backup <env> --list\` lists the others.`,
  });
}

/** The backup's token, or undefined when it has none (BACKUP_TOKEN_MISSING). Never printed. */
export function readBackupToken(backup: Backup): ClusterToken | undefined {
  if (!existsSync(backup.tokenFile)) return undefined;
  try {
    const token = JSON.parse(readRegularText(backup.tokenFile)) as ClusterToken;
    return typeof token?.secret === 'string' && token.secret ? token : undefined;
  } catch {
    return undefined;
  }
}

/** sha256 of a file, streamed (a snapshot of a real cluster is large); undefined when it is absent or no regular file. */
export async function fileSha256(file: string): Promise<string | undefined> {
  let fd: number;
  try {
    fd = openRegularFile(file);
  } catch {
    return undefined;
  }
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { fd })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
