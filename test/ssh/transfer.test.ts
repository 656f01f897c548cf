// Large transfers over a real OpenSSH server: an upload streams a file into a root-owned path through
// sudo and reports each tenth as the engine's progress events; a snapshot streams back (`sudo cat`) into
// the backup folder, checked against the server's sha256, and a copy that is stopped leaves no folder.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pullSnapshot } from '../../src/backup/pull.ts';
import { PendingBackup } from '../../src/backup/store.ts';
import { applyChange, type UploadProgress } from '../../src/engine/apply.ts';
import { uploadBudgetMs } from '../../src/engine/upload-budget.ts';
import { SshTransport, type SshRemote } from '../../src/transport/ssh.ts';
import type { CommandLog, SshTarget } from '../../src/transport/types.ts';
import type { Change } from '../../src/engine/changes.ts';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { fromText } from '../../src/inventory/load.ts';
import { plainRenderer } from '../../src/view/plain.ts';
import { stringify } from 'yaml';
import { topologyFor } from '../support/engine-fixture.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureTestUsers, makeKeypair, OPS_USER, startSshd, tempDir, type Sshd } from '../support/sshd.ts';

const ADDRESS = '127.0.0.14';
const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describeAsRoot('large transfers against a real sshd', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sshd: Sshd;
  let transport: SshTransport;
  let remote: SshRemote;
  const logged: Parameters<CommandLog['record']>[0][] = [];
  const content = randomBytes(64 * MiB + 5);

  let sshTarget: SshTarget;
  const host: HostRef = { name: 'node-1', address: ADDRESS, role: 'server', founder: true };
  let loadInventory: () => ReturnType<typeof fromText>;

  beforeAll(async () => {
    ensureTestUsers();
    tmp = tempDir('bootstrap-ssh-transfer-');
    chmodSync(tmp.dir, 0o755);
    const key = makeKeypair(tmp.dir, 'id_ed25519');
    sshd = await startSshd({ address: ADDRESS, authorizedKeys: [key.publicKey] });
    const knownHosts = join(tmp.dir, 'known_hosts');
    writeFileSync(knownHosts, sshd.knownHostsLines());
    transport = new SshTransport({ authSock: null, home: tmp.dir });
    sshTarget = { name: 'node-1', address: ADDRESS, port: sshd.port, user: OPS_USER, identityFile: key.privateKeyPath, knownHostsFile: knownHosts };
    remote = await transport.connect(sshTarget, { log: { record: (e) => logged.push(e) } });
    mkdirSync(join(tmp.dir, 'artifacts'));
    const inventoryFile = join(tmp.dir, 'sshtest.yaml');
    writeFileSync(
      inventoryFile,
      stringify({
        environment: 'sshtest',
        ssh: { user: OPS_USER, port: sshd.port, identityFile: key.privateKeyPath, knownHostsFile: knownHosts },
        k3s: { version: 'v1.33.5+k3s1', artifacts: join(tmp.dir, 'artifacts') },
        controlPlane: { vip: '127.0.0.9' },
        network: { nodeCidr: '127.0.0.0/24' },
        servers: [{ name: 'node-1', address: ADDRESS, founder: true }],
      }),
    );
    loadInventory = () => fromText(readFileSync(inventoryFile, 'utf8'), inventoryFile, tmp.dir);
  });

  afterAll(async () => {
    await remote?.close();
    await transport?.close();
    await sshd?.stop();
    tmp?.remove();
  });

  it('uploads 64 MiB into a root-owned path and reports each tenth of it', async () => {
    const local = join(tmp.dir, 'images.tar');
    writeFileSync(local, content);
    const target = join(tmp.dir, 'root-only', 'images.tar');
    const seen: UploadProgress[] = [];
    await applyChange(remote, { kind: 'upload', localPath: local, path: target, mode: '0600', sha256: sha(content), currentSha256: null }, undefined, (p) =>
      seen.push(p),
    );
    expect(seen.map((p) => p.percent)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(
      seen.every((p) => p.direction === 'upload' && p.path === target && p.totalBytes === content.length && p.budgetMs === uploadBudgetMs(content.length)),
    ).toBe(true);
    expect(statSync(target)).toMatchObject({ uid: 0, size: content.length });
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(sha(readFileSync(target))).toBe(sha(content));
  });

  it('a run shows the upload in the plan with its budget, and its progress as transfer events and plain lines', async () => {
    const local = join(tmp.dir, 'k3s');
    writeFileSync(local, content);
    const target = join(tmp.dir, 'root-only', 'k3s');
    const upload: Change = { kind: 'upload', localPath: local, path: target, mode: '0755', sha256: sha(content), currentSha256: null, bytes: content.length };
    const phase: Phase = {
      id: 'files',
      title: 'files',
      needs: [],
      hosts: () => [host],
      concurrency: 1,
      steps: [{ id: 'binary', title: 'k3s binary', plan: () => ({ changes: [upload] }) }],
    };
    const events: EngineEvent[] = [];
    const lines: string[] = [];
    const plain = plainRenderer((l) => lines.push(l));
    const run = new SshTransport({ authSock: null, home: tmp.dir });
    const result = await runSession(
      { transport: run, clock: systemClock, emit: (e) => (events.push(e), plain(e)), signal: new AbortController().signal },
      {
        env: 'sshtest',
        inventory: loadInventory(),
        target: () => sshTarget,
        stateDir: join(tmp.dir, 'run-state'),
        waivers: [],
        plan: { phases: [phase], topology: topologyFor([host]), check: false, resume: false },
      },
    );
    await run.close();
    expect(result.summary).toMatchObject({ changed: 1, stopped: 0 });
    const transfers = events.filter((e) => e.type === 'transfer');
    expect(transfers.map((e) => e.percent)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(transfers[0]).toMatchObject({ phase: 'files', step: 'binary', host: 'node-1', direction: 'upload', path: target, totalBytes: content.length });
    expect(lines).toContain(`  node-1  upload ${target}: 50 % of 64.0 MiB (budget 3 min 4 s)`);
    expect(lines).toContain('      sha256 ' + sha(content).slice(0, 12) + '…, absent on the host; 64.0 MiB, budget 3 min 4 s (1 MiB/s plus 120 s)');
    expect(sha(readFileSync(target))).toBe(sha(content));
  });

  it('streams a root-only snapshot back into the backup folder and checks its sha256; the log never holds it', async () => {
    const serverFile = join(tmp.dir, 'root-only', 'images.tar'); // root's, 0600: only sudo cat reads it
    const state = join(tmp.dir, 'state');
    const pending = new PendingBackup(state, 'b1');
    const seen: UploadProgress[] = [];
    logged.length = 0;
    const pulled = await pullSnapshot(remote, serverFile, pending.snapshotSink(), { onProgress: (p) => seen.push(p) });
    expect(pulled).toEqual({ sha256: sha(content), bytes: content.length });
    expect(seen.map((p) => `${p.direction} ${p.percent}`)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((p) => `download ${p}`));
    const dir = pending.commit(
      {
        id: 'b1',
        env: 'lab',
        takenAt: '',
        k3sVersion: '',
        snapshotServer: 'node-1',
        servers: [],
        snapshotName: 's',
        sha256: pulled.sha256,
        bytes: pulled.bytes,
        objects: [],
        counts: {},
      },
      { secret: 's' },
    );
    expect(sha(readFileSync(join(dir, 'snapshot')))).toBe(sha(content));
    const cat = logged.find((e) => /cat /.test(e.command));
    expect(cat).toMatchObject({ secret: true, stdout: '' });
  });

  it('a copy stopped by Ctrl-C ends at once and leaves no backup folder', async () => {
    const serverFile = join(tmp.dir, 'root-only', 'images.tar');
    const state = join(tmp.dir, 'state-aborted');
    const pending = new PendingBackup(state, 'b2');
    const abort = new AbortController();
    const started = Date.now();
    const copying = pullSnapshot(remote, serverFile, pending.snapshotSink(), { signal: abort.signal, onProgress: (p) => p.percent === 10 && abort.abort() });
    const err = await copying.catch((e: unknown) => e);
    pending.abandon();
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(existsSync(join(state, 'backups'))).toBe(true);
    expect(readdirSync(join(state, 'backups'))).toEqual([]);
  });
});
