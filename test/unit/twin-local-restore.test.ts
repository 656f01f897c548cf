// Snapshot and restore with the twin as local processes: 50 ConfigMaps, a snapshot, their deletion,
// a cluster reset from the snapshot on one server, the other rejoining after its db is wiped.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTwin } from '../../lab/twin/build.ts';
import { serverArgs, startLocal, waitFor, type LocalServer } from '../../lab/twin/local.ts';

const IP = (n: number) => `127.32.0.${n}`;
let bin: string;
let root: string;
const running: LocalServer[] = [];

function api(s: LocalServer) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(s.kubeconfig());
  return kc.makeApiClient(k8s.CoreV1Api);
}

async function up(name: string, n: number, extra: string[] = []): Promise<LocalServer> {
  const s = startLocal(bin, name, IP(n), join(root, name), extra);
  running.push(s);
  await waitFor(`${name} up`, () => s.output().includes('k3s is up and running'), 90_000, s.output);
  return s;
}

function voters(ip: string): number {
  const out = execFileSync('etcdctl', [`--endpoints=http://${ip}:2379`, 'member', 'list', '-w', 'json'], { encoding: 'utf8' });
  return (JSON.parse(out).members ?? []).filter((m: any) => !m.isLearner && m.name).length;
}

function reset(name: string, n: number, extra: string[]) {
  return spawnSync(bin, [...serverArgs(name, IP(n), join(root, name), ['--cluster-reset', ...extra])], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NOTIFY_SOCKET: '' },
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'twin-restore-'));
  bin = await buildTwin(join(root, 'bin'));
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('k3s twin snapshot and cluster reset', () => {
  it('restores 50 ConfigMaps from a snapshot on one server; the other rejoins after wiping its db', async () => {
    const s1 = await up('r1', 1, ['--cluster-init']);
    const s2 = await up('r2', 2, ['--server', `https://${IP(1)}:6443`, '--token', s1.token()]);
    const core = api(s1);
    for (let i = 0; i < 50; i++)
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `keep-${i}`, labels: { set: 'dr' } }, data: { i: String(i) } } });

    const args = [
      '--data-dir',
      join(s1.dir, 'data'),
      '--node-ip',
      s1.ip,
      '--bind-address',
      s1.ip,
      '--node-name',
      'r1',
      '--config',
      join(s1.dir, 'config.yaml'),
    ];
    expect(spawnSync(bin, ['etcd-snapshot', 'save', ...args]).status).toBe(0);
    const snapDir = join(s1.dir, 'data', 'server', 'db', 'snapshots');
    const snapshot = join(snapDir, readdirSync(snapDir)[0]);

    await core.deleteCollectionNamespacedConfigMap({ namespace: 'default', labelSelector: 'set=dr' });
    expect((await core.listNamespacedConfigMap({ namespace: 'default', labelSelector: 'set=dr' })).items).toHaveLength(0);
    await s2.stop();
    await s1.stop();

    // Without the token file and without --token the restore is refused with k3s's message.
    const tokenFile = join(s1.dir, 'data', 'server', 'token');
    renameSync(tokenFile, `${tokenFile}.bak`);
    const noToken = reset('r1', 1, [`--cluster-reset-restore-path=${snapshot}`]);
    expect(noToken.status).not.toBe(0);
    expect(noToken.stderr).toContain(`${tokenFile} does not exist, please pass --token to complete the restoration`);
    renameSync(`${tokenFile}.bak`, tokenFile);

    const other = reset('r1', 1, [`--cluster-reset-restore-path=${snapshot}`, '--token', 'some-other-secret']);
    expect(other.status).not.toBe(0);
    expect(other.stderr).toContain('bootstrap data already found and encrypted with different token');

    const ok = reset('r1', 1, [`--cluster-reset-restore-path=${snapshot}`]);
    expect(ok.stderr).toContain(
      'Managed etcd cluster membership has been reset, restart without --cluster-reset flag now. Backup and delete ${datadir}/server/db on each peer etcd server and rejoin the nodes',
    );
    expect(
      ok.status,
      ok.stderr
        .split('\n')
        .filter((l) => !l.startsWith('{') || /"(error|fatal)"/.test(l))
        .join('\n'),
    ).toBe(0);

    const r1 = await up('r1', 1, ['--cluster-init']);
    expect(voters(IP(1))).toBe(1);
    rmSync(join(s2.dir, 'data', 'server', 'db'), { recursive: true, force: true });
    await up('r2', 2, ['--server', `https://${IP(1)}:6443`, '--token', r1.token()]);
    await waitFor('2 voters', () => voters(IP(1)) === 2, 30_000);
    const back = await api(r1).listNamespacedConfigMap({ namespace: 'default', labelSelector: 'set=dr' });
    expect(back.items).toHaveLength(50);
  }, 300_000);

  it('cluster-reset without a snapshot keeps the data and leaves a one-member cluster', async () => {
    await Promise.all(running.map((s) => s.stop()));
    const r = reset('r1', 1, []);
    expect(r.stderr).toContain('Managed etcd cluster membership has been reset, restart without --cluster-reset flag now.');
    expect(r.status).toBe(0);
    const r1 = await up('r1', 1, []);
    expect(voters(IP(1))).toBe(1);
    expect((await api(r1).listNamespacedConfigMap({ namespace: 'default', labelSelector: 'set=dr' })).items).toHaveLength(50);
  }, 120_000);
});
