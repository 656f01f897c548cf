// The environment's backup folder on the operator's machine: <state folder>/backups/<id>/ holding the
// etcd snapshot, the cluster token and manifest.json. Backups are secrets (the token, and the snapshot
// holds every Secret of the cluster): folders 0700, files 0600, the token never printed.
import { createHash } from 'node:crypto';
import { chmodSync, createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { CauseError } from '../errors.ts';
import type { ClusterToken } from '../../phases/k3s/token.ts';

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
  return at.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
}

/** Writes a complete backup folder, or none: it is assembled beside its place and renamed into it. */
export function writeBackup(stateDir: string, manifest: BackupManifest, snapshot: Buffer, token: ClusterToken): string {
  const root = backupsDir(stateDir);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  chmodSync(root, 0o700);
  const dir = join(root, manifest.id);
  const tmp = `${dir}.partial`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { mode: 0o700 });
  writeFileSync(join(tmp, SNAPSHOT_FILE), snapshot, { mode: 0o600 });
  writeFileSync(join(tmp, TOKEN_FILE), JSON.stringify(token), { mode: 0o600 });
  writeFileSync(join(tmp, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, dir);
  return dir;
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
  const manifest = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8')) as BackupManifest;
  return { dir, manifest, snapshot: join(dir, SNAPSHOT_FILE), tokenFile: join(dir, TOKEN_FILE) };
}

/** The backup's token, or undefined when it has none (BACKUP_TOKEN_MISSING). Never printed. */
export function readBackupToken(backup: Backup): ClusterToken | undefined {
  if (!existsSync(backup.tokenFile)) return undefined;
  try {
    const token = JSON.parse(readFileSync(backup.tokenFile, 'utf8')) as ClusterToken;
    return typeof token?.secret === 'string' && token.secret ? token : undefined;
  } catch {
    return undefined;
  }
}

/** sha256 of a file, streamed (a snapshot of a real cluster is large); undefined when it is absent. */
export async function fileSha256(file: string): Promise<string | undefined> {
  if (!existsSync(file)) return undefined;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
