// Large transfers: an upload's budget grows with its size and appears in the plan, long uploads and a
// backup's snapshot report progress once per tenth (the same lines every run), uploads stream from
// the file, and a snapshot streams into a 0600 file of a backup folder that is complete or absent.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pullSnapshot } from '../../src/backup/pull.ts';
import { PendingBackup, type BackupManifest } from '../../src/backup/store.ts';
import { applyChange, countBytes, PROGRESS_MIN_BYTES, type UploadProgress } from '../../src/engine/apply.ts';
import { uploadBudgetMs } from '../../src/engine/upload-budget.ts';
import { describeChange, type UploadChange } from '../../src/engine/changes.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import { jsonRenderer } from '../../src/view/json.ts';
import { plainRenderer } from '../../src/view/plain.ts';
import { LocalRemote } from '../support/local-remote.ts';

const MiB = 1024 * 1024;

/** The uploads' stamps, written as on a host (src/engine/sum-stamps.ts; as root only), are not left on this machine. */
const stamped: string[] = [];
afterAll(() => stamped.forEach((path) => rmSync(`/var/lib/bootstrap/sums/${encodeURIComponent(path)}`, { force: true })));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('upload budget', () => {
  it('is 120 s plus the bytes at 1 MiB/s', () => {
    expect(uploadBudgetMs(0)).toBe(120_000);
    expect(uploadBudgetMs(70 * MiB)).toBe(190_000);
    expect(uploadBudgetMs(1024 * MiB)).toBe(120_000 + 1024_000);
  });

  it('appears in the plan of an upload whose size the planner knows', () => {
    const change: UploadChange = {
      kind: 'upload',
      localPath: 'artifacts/k3s',
      path: '/usr/local/bin/k3s',
      mode: '0755',
      sha256: 'ab'.repeat(32),
      currentSha256: null,
      bytes: 70 * MiB,
    };
    expect(describeChange(change).detail).toBe('sha256 abababababab…, absent on the host; 70.0 MiB, budget 3 min 10 s (1 MiB/s plus 120 s)');
    expect(describeChange({ ...change, bytes: undefined }).detail).toBe('sha256 abababababab…, absent on the host');
  });
});

describe('progress', () => {
  async function through(total: number, chunk: number): Promise<[number, number][]> {
    const seen: [number, number][] = [];
    const t = countBytes(total, (bytes, percent) => seen.push([bytes, percent]));
    t.resume();
    for (let sent = 0; sent < total; sent += chunk) t.write(Buffer.alloc(Math.min(chunk, total - sent)));
    t.end();
    await new Promise((r) => t.once('end', r));
    return seen;
  }

  it('reports each tenth of a large transfer once, in order, the last at 100 %', async () => {
    const seen = await through(20 * MiB, 64 * 1024);
    expect(seen.map(([, p]) => p)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(seen.at(-1)).toEqual([20 * MiB, 100]);
    // A chunk that crosses several tenths reports each of them, with the same bytes whatever the chunks.
    expect(await through(20 * MiB, 5 * MiB)).toEqual(seen);
    expect(seen[2]).toEqual([Math.floor(20 * MiB * 0.3), 30]);
  });

  it('says nothing for a small transfer', async () => {
    expect(await through(PROGRESS_MIN_BYTES - 1, 64 * 1024)).toEqual([]);
  });

  it('reads as one line per event in plain output and one JSON object in --json', () => {
    const e: EngineEvent = {
      type: 'transfer',
      phase: 'k3s-founder',
      step: 'images',
      host: 'k3s-prod-1',
      direction: 'upload',
      path: '/var/lib/rancher/k3s/agent/images/k3s-airgap-images-amd64.tar',
      bytes: 21 * MiB,
      totalBytes: 70 * MiB,
      percent: 30,
      budgetMs: 190_000,
    };
    const plain: string[] = [];
    plainRenderer((l) => plain.push(l))(e);
    expect(plain).toEqual(['  k3s-prod-1  upload /var/lib/rancher/k3s/agent/images/k3s-airgap-images-amd64.tar: 30 % of 70.0 MiB (budget 3 min 10 s)']);
    const json: string[] = [];
    jsonRenderer((l) => json.push(l))(e);
    expect(JSON.parse(json[0])).toEqual(e);
  });
});

describe('applying an upload', () => {
  it('streams the file to the host, writes it whole with its mode, and reports its tenths', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transfer-unit-'));
    const local = join(dir, 'images.tar');
    const content = randomBytes(PROGRESS_MIN_BYTES + 123);
    writeFileSync(local, content);
    const target = join(dir, 'host', 'images', 'images.tar');
    stamped.push(target);
    const remote = new LocalRemote('node-1');
    const seen: UploadProgress[] = [];
    await applyChange(remote, { kind: 'upload', localPath: local, path: target, mode: '0640', sha256: sha(content), currentSha256: null }, undefined, (p) =>
      seen.push(p),
    );
    expect(sha(readFileSync(target))).toBe(sha(content));
    expect(statSync(target).mode & 0o777).toBe(0o640);
    expect(existsSync(`${target}.bootstrap-tmp`)).toBe(false);
    expect(remote.execs).toHaveLength(1);
    expect(remote.execs[0].stdin).toBe('(stream)'); // never read into memory as one buffer
    expect(seen.map((p) => p.percent)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(seen.at(-1)).toEqual({
      direction: 'upload',
      path: target,
      bytes: content.length,
      totalBytes: content.length,
      percent: 100,
      budgetMs: uploadBudgetMs(content.length),
    });
  });
});

describe('a copy that is not what was sent', () => {
  it('stops the upload with both sums and leaves the file in place as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transfer-unit-'));
    const local = join(dir, 'k3s');
    writeFileSync(local, 'k3s v2');
    const target = join(dir, 'host', 'k3s');
    stamped.push(target);
    const remote = new LocalRemote('node-1');
    await applyChange(remote, { kind: 'upload', localPath: local, path: target, mode: '0755', sha256: sha(Buffer.from('k3s v2')), currentSha256: null });
    // The planner's sum of the file is not what the host receives (the file changed after it was hashed).
    writeFileSync(local, 'k3s v3');
    const failed = await applyChange(remote, {
      kind: 'upload',
      localPath: local,
      path: target,
      mode: '0755',
      sha256: sha(Buffer.from('k3s v2')),
      currentSha256: null,
    }).catch((e) => e);
    expect(failed).toMatchObject({
      causeId: 'APPLY_FAILED',
      host: 'node-1',
      evidence: { exitCode: 9, seen: `the uploaded copy's sha256 is ${sha(Buffer.from('k3s v3'))}, not the ${sha(Buffer.from('k3s v2'))} that was sent` },
    });
    expect(readFileSync(target, 'utf8')).toBe('k3s v2');
    expect(readdirSync(join(dir, 'host'))).toEqual(['k3s']);
  });
});

describe('backup snapshot', () => {
  const manifest = (id: string, over: Partial<BackupManifest> = {}): BackupManifest => ({
    id,
    env: 'lab',
    takenAt: '2026-11-30T05:40:12.000Z',
    k3sVersion: 'v1.33.5+k3s1',
    snapshotServer: 'k3s-lab-1',
    servers: ['k3s-lab-1'],
    snapshotName: 'bootstrap-backup-k3s-lab-1-1',
    sha256: 'x',
    bytes: 0,
    objects: [],
    counts: {},
    ...over,
  });

  it('streams into a 0600 file, checks it against the server, and the folder appears whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pull-unit-'));
    const serverFile = join(dir, 'snapshot-on-server');
    const content = randomBytes(PROGRESS_MIN_BYTES * 2 + 7);
    writeFileSync(serverFile, content);
    const state = join(dir, 'state');
    const pending = new PendingBackup(state, '2026-11-30T05-40-12Z');
    const seen: UploadProgress[] = [];
    const pulled = await pullSnapshot(new LocalRemote('k3s-lab-1'), serverFile, pending.snapshotSink(), { onProgress: (p) => seen.push(p) });
    expect(pulled).toEqual({ sha256: sha(content), bytes: content.length });
    expect(seen.map((p) => `${p.direction} ${p.percent}`)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((p) => `download ${p}`));
    expect(readdirSync(join(state, 'backups'))).toEqual(['2026-11-30T05-40-12Z.partial']);
    const final = pending.commit(manifest('2026-11-30T05-40-12Z', pulled), { secret: 's3cret' });
    expect(readdirSync(join(state, 'backups'))).toEqual(['2026-11-30T05-40-12Z']);
    expect(statSync(join(final, 'snapshot')).mode & 0o777).toBe(0o600);
    expect(sha(readFileSync(join(final, 'snapshot')))).toBe(sha(content));
  });

  it('names BACKUP_FAILED when the snapshot is not there, and leaves no backup folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pull-unit-'));
    const state = join(dir, 'state');
    const pending = new PendingBackup(state, 'b1');
    const err = await pullSnapshot(new LocalRemote('k3s-lab-1'), join(dir, 'absent'), pending.snapshotSink()).catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'BACKUP_FAILED', host: 'k3s-lab-1', evidence: { seen: 'the snapshot is not there to copy' } });
    pending.abandon();
    expect(readdirSync(join(state, 'backups'))).toEqual([]);
  });

  it('names BACKUP_FAILED when the copy does not match the server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pull-unit-'));
    const serverFile = join(dir, 'snap');
    writeFileSync(serverFile, 'the real snapshot');
    // A host whose cat returns other bytes than its sha256sum read (a file changed under the copy).
    const remote = new LocalRemote('k3s-lab-1');
    const exec = remote.exec.bind(remote);
    remote.exec = (command, opts) => exec(command.startsWith('cat ') ? 'printf other' : command, opts);
    const pending = new PendingBackup(join(dir, 'state'), 'b2');
    const err = await pullSnapshot(remote, serverFile, pending.snapshotSink()).catch((e: unknown) => e);
    expect(err).toMatchObject({
      causeId: 'BACKUP_FAILED',
      evidence: { seen: expect.stringMatching(/^the copy \(5 bytes, sha256 [0-9a-f]{64}\) is not the server's \(17 bytes, sha256 [0-9a-f]{64}\)$/) },
    });
  });
});
