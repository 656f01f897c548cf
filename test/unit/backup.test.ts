// The backup's pure parts: the object inventory, version order, and the checks a restore makes before
// it touches any host.
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkBackup } from '../../src/backup/checks.ts';
import { countsByKind, listableResources, missingObjects, objectKeys } from '../../src/backup/objects.ts';
import { type BackupManifest, backupId, fileSha256, listBackups, readBackupToken, resolveBackup, writeBackup } from '../../src/backup/store.ts';
import { compareK3sVersions, versionFromOutput } from '../../src/backup/version.ts';

const manifest = (over: Partial<BackupManifest> = {}): BackupManifest => ({
  id: '2026-11-30T05-40-12Z',
  env: 'lab',
  takenAt: '2026-11-30T05:40:12.000Z',
  k3sVersion: 'v1.31.4+k3s1',
  snapshotServer: 'k3s-lab-1',
  servers: ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'],
  snapshotName: 'bootstrap-backup-k3s-lab-1-1764481212',
  sha256: 'x',
  bytes: 4,
  objects: [],
  counts: {},
  ...over,
});

describe('object inventory', () => {
  it('keys objects by kind/namespace/name; cluster-scoped ones have an empty namespace; Pods and Events are left out', () => {
    const listing = 'ConfigMap default dr-1\nNode  k3s-lab-1\nPod kube-system coredns-x\nEvent default e.1\nConfigMap default dr-1\n\n';
    expect(objectKeys(listing)).toEqual(['ConfigMap/default/dr-1', 'Node//k3s-lab-1']);
  });

  it('lists every type but Pods, Events and the live metrics API', () => {
    expect(listableResources('configmaps\npods\nevents\nevents.events.k8s.io\nnodes.metrics.k8s.io\npods.metrics.k8s.io\nwidgets.drill.example.com\n')).toEqual(
      ['configmaps', 'widgets.drill.example.com'],
    );
  });

  it('counts by kind and names what is missing', () => {
    const keys = ['ConfigMap/a/x', 'ConfigMap/a/y', 'Secret/a/s'];
    expect(countsByKind(keys)).toEqual({ ConfigMap: 2, Secret: 1 });
    expect(missingObjects(keys, ['ConfigMap/a/x'])).toEqual(['ConfigMap/a/y', 'Secret/a/s']);
  });
});

describe('k3s versions', () => {
  it('orders by version, then by the k3s release', () => {
    expect(compareK3sVersions('v1.31.4+k3s1', 'v1.31.4+k3s1')).toBe(0);
    expect(compareK3sVersions('v1.31.4+k3s2', 'v1.31.4+k3s1')).toBeGreaterThan(0);
    expect(compareK3sVersions('v1.30.9+k3s1', 'v1.31.0+k3s1')).toBeLessThan(0);
    expect(compareK3sVersions('v1.32.0+k3s1', 'v1.31.9+k3s3')).toBeGreaterThan(0);
    expect(versionFromOutput('k3s version v1.31.4+k3s1 (a1b2c3d4)\ngo version go1.22')).toBe('v1.31.4+k3s1');
  });
});

describe('backup folder', () => {
  it('writes 0700/0600, lists, resolves by id or path, and reads the token back', async () => {
    const state = mkdtempSync(join(tmpdir(), 'backup-unit-'));
    const id = backupId(new Date('2026-11-30T05:40:12.345Z'));
    expect(id).toBe('2026-11-30T05-40-12Z');
    const dir = writeBackup(state, manifest({ id }), Buffer.from('snap'), { secret: 's3cret', full: 'K10abc::server:s3cret' });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of ['snapshot', 'cluster-token.json', 'manifest.json']) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    expect(listBackups(state).map((b) => b.manifest.id)).toEqual([id]);
    expect(resolveBackup(id, state).dir).toBe(dir);
    expect(resolveBackup(dir, state).dir).toBe(dir);
    expect(readBackupToken(resolveBackup(id, state))).toEqual({ secret: 's3cret', full: 'K10abc::server:s3cret' });
    expect(await fileSha256(join(dir, 'snapshot'))).toBe('1c27324f013705cbf0c49f3d3bb103c7069ed5988889d426c10cfc25684f0a31');
    expect(() => resolveBackup('no-such-backup', state)).toThrow(expect.objectContaining({ causeId: 'BACKUP_NOT_FOUND' }));
  });
});

describe('checks before a restore touches a host', () => {
  const state = mkdtempSync(join(tmpdir(), 'backup-check-'));
  const dir = writeBackup(state, manifest(), Buffer.from('snap'), { secret: 's' });
  const backup = resolveBackup(dir, state);
  const base = { backup, token: { secret: 's' }, snapshotSha256: 'x', inventoryVersion: 'v1.31.4+k3s1', envToken: undefined };
  const ids = (over: object) => checkBackup({ ...base, ...over }).map((c) => c.causeId);

  it('passes a complete backup onto an environment without a token, or with the same one', () => {
    expect(ids({})).toEqual([]);
    expect(ids({ envToken: { secret: 's', full: 'K10x::server:s' } })).toEqual([]);
  });

  it('names each problem: no token, another checksum, a newer k3s, another token in the state folder', () => {
    expect(ids({ token: undefined })).toEqual(['BACKUP_TOKEN_MISSING']);
    expect(ids({ snapshotSha256: 'y' })).toEqual(['SNAPSHOT_CHECKSUM_MISMATCH']);
    expect(ids({ snapshotSha256: undefined })).toEqual(['SNAPSHOT_CHECKSUM_MISMATCH']);
    expect(ids({ inventoryVersion: 'v1.30.2+k3s1' })).toEqual(['SNAPSHOT_VERSION_NEWER']);
    expect(ids({ envToken: { secret: 'other' } })).toEqual(['RESTORE_TOKEN_CONFLICT']);
  });

  it('never puts the token in its evidence', () => {
    const all = checkBackup({ ...base, token: { secret: 'tok-123' }, envToken: { secret: 'tok-456' }, snapshotSha256: 'y' });
    expect(JSON.stringify(all.map((c) => c.toJSON()))).not.toMatch(/tok-123|tok-456/);
  });
});
