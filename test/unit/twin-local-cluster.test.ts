// The twin as processes on this machine (loopback addresses, temporary data dirs, no lab): a founder and
// two joiners on real etcd, driven through @kubernetes/client-node and plain HTTPS as a user would.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTwin } from '../../lab/twin/build.ts';
import { serverArgs, startLocal, waitFor, type LocalServer } from '../../lab/twin/local.ts';

const IP = (n: number) => `127.31.0.${n}`;
let bin: string;
let root: string;
const servers: LocalServer[] = [];

function core(s: LocalServer) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(s.kubeconfig());
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api), objects: k8s.KubernetesObjectApi.makeApiClient(kc) };
}

function get(url: string, opts: https.RequestOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { rejectUnauthorized: false, ...opts }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

function adminTLS(s: LocalServer) {
  const kc = YAML.parse(readFileSync(join(s.dir, 'k3s.yaml'), 'utf8'));
  const b = (x: string) => Buffer.from(x, 'base64');
  return {
    ca: b(kc.clusters[0].cluster['certificate-authority-data']),
    cert: b(kc.users[0].user['client-certificate-data']),
    key: b(kc.users[0].user['client-key-data']),
  };
}

/** Runs a server that must fail; returns its exit code and log. */
function runFailing(name: string, ip: string, extra: string[]): { code: number | null; log: string } {
  const dir = mkdtempSync(join(root, `fail-${name}-`));
  const r = spawnSync(bin, serverArgs(name, ip, dir, extra), { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NOTIFY_SOCKET: '' } });
  return { code: r.status, log: r.stdout + r.stderr };
}

async function voters(s: LocalServer): Promise<number> {
  const out = execFileSync('etcdctl', [`--endpoints=http://${s.ip}:2379`, 'member', 'list', '-w', 'json'], { encoding: 'utf8' });
  return (JSON.parse(out).members ?? []).filter((m: any) => !m.isLearner && m.name).length;
}

beforeAll(async () => {
  for (const tool of ['etcd', 'etcdctl', 'openssl']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is needed (Debian: etcd-server, etcd-client, openssl)`);
  }
  root = mkdtempSync(join(tmpdir(), 'twin-local-'));
  bin = await buildTwin(join(root, 'bin'));
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  if (root) rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('k3s twin on this machine', () => {
  it('k3s --version prints the claimed version', () => {
    expect(execFileSync(bin, ['--version'], { encoding: 'utf8' })).toMatch(/^k3s version v1\.\d+\.\d+\+k3s\d+ \(\w+\)\ngo version go/);
  });

  it('founder: cluster-init starts etcd and serves; token, kubeconfig 0600, Node with roles', async () => {
    const dir = join(root, 's1');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.yaml'), 'cluster-init: true\ntls-san:\n  - 127.31.0.200\n');
    const s1 = startLocal(bin, 's1', IP(1), dir);
    servers.push(s1);
    await waitFor('founder up', () => s1.output().includes('k3s is up and running'), 60_000, s1.output);
    expect(s1.output()).toContain('ETCD server is now running');

    const token = s1.token();
    const cacerts = await get(`https://${IP(1)}:6443/cacerts`);
    expect(token).toMatch(/^K10[0-9a-f]{64}::server:[0-9a-f]+$/);
    expect(token.slice(3, 67)).toBe(execFileSync('sha256sum', { input: cacerts.body, encoding: 'utf8' }).split(' ')[0]);

    const kcFile = join(dir, 'k3s.yaml');
    expect(statSync(kcFile).mode & 0o777).toBe(0o600);
    const kc = YAML.parse(readFileSync(kcFile, 'utf8'));
    expect(kc.clusters[0]).toMatchObject({ name: 'default', cluster: { server: 'https://127.0.0.1:6443' } });
    expect(kc['current-context']).toBe('default');

    const { core: api } = core(s1);
    await waitFor('node s1', async () => (await api.listNode()).items.length === 1);
    const node = await api.readNode({ name: 's1' });
    expect(node.metadata?.labels).toMatchObject({
      'node-role.kubernetes.io/etcd': 'true',
      'node-role.kubernetes.io/control-plane': 'true',
      'node-role.kubernetes.io/master': 'true',
    });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.message).toContain('cni plugin not initialized');
    // EtcdIsVoter comes from the etcd leader's learner-management tick, after the Node registered.
    await waitFor(
      's1 EtcdIsVoter',
      async () => (await api.readNode({ name: 's1' })).status?.conditions?.find((c) => c.type === 'EtcdIsVoter')?.status === 'True',
      20_000,
    );
  }, 90_000);

  it('/readyz is 401 without credentials and ok with the admin client certificate', async () => {
    const s1 = servers[0];
    expect((await get(`https://${IP(1)}:6443/readyz`)).status).toBe(401);
    const r = await get(`https://${IP(1)}:6443/readyz`, { ...adminTLS(s1), rejectUnauthorized: true });
    expect(r).toEqual({ status: 200, body: 'ok' });
  });

  it('/db/info answers a client on 127.0.0.1 without credentials, as k3s does, and no one else without the token', async () => {
    const local = await get(`https://${IP(1)}:6443/db/info`, { localAddress: '127.0.0.1' });
    expect(local.status).toBe(200);
    // Go's encoding of etcd's members: the uint64 ID a bare number.
    expect(local.body).toMatch(/^\{"members":\[\{"ID":\d+,"name":"[^"]+-[0-9a-f]{8}","peerURLs":\["http:\/\/127\.31\.0\.1:2380"\]/);
    expect((await get(`https://${IP(1)}:6443/db/info`, { localAddress: IP(9) })).status).not.toBe(200);
    const token = servers[0].token();
    const auth = `Basic ${Buffer.from(`server:${token.split(':').pop()}`).toString('base64')}`;
    expect((await get(`https://${IP(1)}:6443/db/info`, { localAddress: IP(9), headers: { authorization: auth } })).status).toBe(200);
  });

  it('TLS verifies through a tls-san name and fails for a name outside tls-san', async () => {
    const { ca } = adminTLS(servers[0]);
    const ok = await get(`https://${IP(1)}:6443/cacerts`, { ca, rejectUnauthorized: true, servername: '127.31.0.200' });
    expect(ok.status).toBe(200);
    const viaSan = https.get({ host: IP(1), port: 6443, path: '/cacerts', ca, rejectUnauthorized: true, servername: 'not-in-tls-san.example' });
    await expect(new Promise((resolve, reject) => viaSan.on('response', resolve).on('error', reject))).rejects.toThrow(/altnames|does not match|Hostname/i);
  });

  it('configmaps: create, list by label, conflict on a stale resourceVersion, server-side apply, watch, delete', async () => {
    const { core: api, objects, kc } = core(servers[0]);
    const created = await api.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c1', labels: { app: 'a' } }, data: { k: 'v' } } });
    await api.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c2', labels: { app: 'b' } } } });
    const listed = await api.listNamespacedConfigMap({ namespace: 'default', labelSelector: 'app=a' });
    expect(listed.items.map((c) => c.metadata?.name)).toEqual(['c1']);

    await api.replaceNamespacedConfigMap({ name: 'c1', namespace: 'default', body: { ...created, data: { k: 'v2' } } });
    await expect(api.replaceNamespacedConfigMap({ name: 'c1', namespace: 'default', body: { ...created, data: { k: 'v3' } } })).rejects.toMatchObject({
      code: 409,
    });

    const events: string[] = [];
    const watch = new k8s.Watch(kc);
    const req = await watch.watch(
      '/api/v1/namespaces/default/configmaps',
      { resourceVersion: listed.metadata?.resourceVersion },
      (type, obj) => events.push(`${type} ${obj.metadata.name}`),
      () => undefined,
    );
    await objects.patch(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c3', namespace: 'default' }, data: { x: '1' } },
      undefined,
      undefined,
      'test',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    await api.deleteNamespacedConfigMap({ name: 'c2', namespace: 'default' });
    await waitFor('watch events', () => events.includes('ADDED c3') && events.includes('DELETED c2'), 10_000);
    req.abort();
    expect((await api.readNamespacedConfigMap({ name: 'c3', namespace: 'default' })).data).toEqual({ x: '1' });
    await expect(api.createNamespacedConfigMap({ namespace: 'nope', body: { metadata: { name: 'x' } } })).rejects.toMatchObject({ code: 404 });
  });

  it('CRDs and custom resources; manifests in server/manifests are applied', async () => {
    const s1 = servers[0];
    const { objects } = core(s1);
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
    await objects.create(crd);
    await waitFor('Widget served', async () =>
      Boolean(await objects.create({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'default' }, spec: { size: 3 } } as any)),
    );
    const w = await objects.read({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'default' } });
    expect((w as any).spec.size).toBe(3);

    const manifests = join(s1.dir, 'data', 'server', 'manifests');
    mkdirSync(manifests, { recursive: true });
    writeFileSync(
      join(manifests, 'demo.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-manifest\n  namespace: demo\ndata:\n  a: "1"\n',
    );
    const { core: api } = core(s1);
    await waitFor('manifest applied', async () => (await api.readNamespacedConfigMap({ name: 'from-manifest', namespace: 'demo' })).data?.a === '1', 20_000);
    writeFileSync(join(manifests, 'demo.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-manifest\n  namespace: demo\ndata:\n  a: "2"\n');
    await waitFor(
      'manifest re-applied on change',
      async () => (await api.readNamespacedConfigMap({ name: 'from-manifest', namespace: 'demo' })).data?.a === '2',
      20_000,
    );
  }, 60_000);

  it('joiners fail with k3s messages: founder unreachable, wrong CA hash, critical mismatch', () => {
    const token = servers[0].token();
    const down = runFailing('j', IP(9), ['--server', `https://${IP(99)}:6443`, '--token', token]);
    expect(down.code).not.toBe(0);
    expect(down.log).toContain(`failed to get CA certs: Get \\"https://${IP(99)}:6443/cacerts\\": dial tcp ${IP(99)}:6443: connect: connection refused`);

    const wrong = `K10${'0'.repeat(64)}::server:${token.split(':').pop()}`;
    const hash = runFailing('j', IP(9), ['--server', `https://${IP(1)}:6443`, '--token', wrong]);
    expect(hash.code).not.toBe(0);
    expect(hash.log).toMatch(/token CA hash does not match the Cluster CA certificate hash: 0{64} != [0-9a-f]{64}/);

    const mismatch = runFailing('j', IP(9), ['--server', `https://${IP(1)}:6443`, '--token', token, '--flannel-backend', 'none']);
    expect(mismatch.code).not.toBe(0);
    expect(mismatch.log).toContain('critical configuration mismatched: flannel-backend');
    expect(mismatch.log).toContain('critical configuration value mismatch between servers');
  }, 90_000);

  it('a joiner whose clock is a day behind fails TLS with "x509: certificate has expired or is not yet valid"', () => {
    const dir = mkdtempSync(join(root, 'skew-'));
    const r = spawnSync(
      'faketime',
      ['-f', '-1d', bin, ...serverArgs('skewed', IP(9), dir, ['--server', `https://${IP(1)}:6443`, '--token', servers[0].token()])],
      { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NOTIFY_SOCKET: '', FAKETIME_DONT_FAKE_MONOTONIC: '1' } },
    );
    expect(r.status).not.toBe(0);
    // k3s pkg/clientaccess/token.go getCACerts: the second /cacerts request verifies the server with the bundle.
    expect(r.stderr).toContain(
      `failed to validate token: CA cert validation failed: Get \\"https://${IP(1)}:6443/cacerts\\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid`,
    );
  }, 60_000);

  it('two joiners, one at a time, become etcd voters; every server lists the same 3 nodes', async () => {
    const token = servers[0].token();
    for (const n of [2, 3]) {
      const s = startLocal(bin, `s${n}`, IP(n), join(root, `s${n}`), ['--server', `https://${IP(1)}:6443`, '--token', token]);
      servers.push(s);
      await waitFor(
        `s${n} up`,
        () => s.output().includes('k3s is up and running'),
        60_000,
        () =>
          s
            .output()
            .split('\n')
            .filter((l) => !l.startsWith('{') || l.includes('"error"'))
            .join('\n'),
      );
    }
    expect(await voters(servers[0])).toBe(3);
    for (const s of servers) {
      const { core: api } = core(s);
      await waitFor('3 nodes', async () => (await api.listNode()).items.length === 3);
      expect((await api.listNode()).items.map((n) => n.metadata?.name).sort()).toEqual(['s1', 's2', 's3']);
      expect((await api.readNamespacedConfigMap({ name: 'c1', namespace: 'default' })).data?.k).toBe('v2');
    }
    const { core: api2 } = core(servers[2]);
    await waitFor(
      's3 EtcdIsVoter',
      async () => (await api2.readNode({ name: 's3' })).status?.conditions?.find((c) => c.type === 'EtcdIsVoter')?.status === 'True',
      20_000,
    );
  }, 150_000);

  it('k3s agent registers its Node with the token; a rebuilt agent of the same name is rejected by its node password', async () => {
    const agentRun = (dir: string) => {
      let out = '';
      const p = spawn(
        bin,
        [
          'agent',
          '--server',
          `https://${IP(2)}:6443`,
          '--token',
          servers[0].token(),
          '--node-name',
          'a1',
          '--node-ip',
          IP(50),
          '--data-dir',
          dir,
          '--config',
          join(dir, 'none.yaml'),
        ],
        {
          env: {
            ...process.env,
            NOTIFY_SOCKET: '',
            K3S_TWIN_HEARTBEAT_MS: '1000',
            K3S_TWIN_NODE_PASSWORD_FILE: join(dir, 'node-password'),
            K3S_TWIN_KUBELET_ADDRESS: IP(50),
          },
        },
      );
      p.stderr.on('data', (c) => (out += c));
      return { p, out: () => out };
    };
    const first = agentRun(mkdtempSync(join(root, 'agent-')));
    try {
      const { core: api } = core(servers[0]);
      await waitFor('node a1', async () => Boolean(await api.readNode({ name: 'a1' })), 20_000);
      const a1 = await api.readNode({ name: 'a1' });
      expect(a1.metadata?.labels?.['node-role.kubernetes.io/control-plane']).toBeUndefined();
      expect(a1.status?.addresses?.find((a) => a.type === 'InternalIP')?.address).toBe(IP(50));
      expect(a1.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
      // Its client load balancer: the --server as the default, then every server the supervisor lists.
      const all = [1, 2, 3].map((n) => `${IP(n)}:6443`).join(' ');
      await waitFor(
        'the servers in its load balancer',
        () => first.out().includes(`msg="Updated load balancer k3s-agent-load-balancer server addresses -> [${all}] [default: ${IP(2)}:6443]"`),
        10_000,
        first.out,
      );
      expect(first.out()).toContain(`msg="Got apiserver addresses from supervisor: [${all}]"`);
      first.p.kill('SIGTERM');
      const rebuilt = agentRun(mkdtempSync(join(root, 'agent-rebuilt-')));
      try {
        await waitFor(
          'password rejected',
          () =>
            rebuilt
              .out()
              .includes("Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry"),
          20_000,
          rebuilt.out,
        );
        // k3s wraps it with the certificate it asked for; the server logs its 403.
        expect(rebuilt.out()).toMatch(/Waiting to retrieve agent configuration; server is not ready: \S+\/agent\/serving-kubelet\.crt: Node password rejected/);
        expect(servers[0].output() + servers[1].output() + servers[2].output()).toContain(
          `Sending HTTP 403 response to ${IP(50)}: unable to verify password for node a1: hash does not match`,
        );
      } finally {
        rebuilt.p.kill('SIGTERM');
      }
      await api.deleteNode({ name: 'a1' });
      await expect(api.readNamespacedSecret({ name: 'a1.node-password.k3s', namespace: 'kube-system' })).rejects.toMatchObject({ code: 404 });
    } finally {
      first.p.kill('SIGTERM');
    }
  }, 60_000);

  it('a second server with the name of an existing member fails: duplicate node name found', () => {
    const dup = runFailing('s2', IP(9), ['--server', `https://${IP(1)}:6443`, '--token', servers[0].token()]);
    expect(dup.code).not.toBe(0);
    expect(dup.log).toContain('etcd cluster join failed: duplicate node name found, please use a unique name for this node');
  }, 60_000);

  it('a CNI config file makes the Node Ready', async () => {
    const s1 = servers[0];
    const cni = join(s1.dir, 'data', 'agent', 'etc', 'cni', 'net.d');
    mkdirSync(cni, { recursive: true });
    writeFileSync(join(cni, '05-cilium.conflist'), '{}');
    const { core: api } = core(s1);
    await waitFor('s1 Ready', async () => (await api.readNode({ name: 's1' })).status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 20_000);
  }, 30_000);

  it('etcd-snapshot save and ls write real snapshots in server/db/snapshots', () => {
    const s1 = servers[0];
    const args = [
      '--data-dir',
      join(s1.dir, 'data'),
      '--node-ip',
      s1.ip,
      '--bind-address',
      s1.ip,
      '--node-name',
      's1',
      '--config',
      join(s1.dir, 'config.yaml'),
    ];
    const save = spawnSync(bin, ['etcd-snapshot', 'save', ...args], { encoding: 'utf8' });
    expect(save.status).toBe(0);
    const ls = execFileSync(bin, ['etcd-snapshot', 'ls', ...args], { encoding: 'utf8' });
    expect(ls.split('\n')[0]).toMatch(/^Name\s+Location\s+Size\s+Created/);
    const name = /^(on-demand-s1-\d+)\s/m.exec(ls)?.[1];
    expect(name).toBeTruthy();
    expect(existsSync(join(s1.dir, 'data', 'server', 'db', 'snapshots', name!))).toBe(true);
  }, 30_000);

  it('a server whose node password changed (a reinstalled host) is verified locally and comes up; the stale Secret only earns a Warning Event', async () => {
    const { core: api } = core(servers[0]);
    const s3 = servers[2];
    const reasons = async () =>
      (await api.listNamespacedEvent({ namespace: 'default' })).items
        .filter((e) => e.involvedObject?.name === 's3' && /^NodePassword/.test(e.reason ?? ''))
        .map((e) => `${e.type} ${e.reason}: ${e.message}`);
    expect(await reasons()).toEqual(['Normal NodePasswordValidationComplete: Deferred node password secret validation complete']);
    writeFileSync(join(s3.dir, 'data', 'agent', 'etc', 'rancher', 'node', 'password'), 'another-password\n');
    const starts = s3.starts();
    s3.proc().kill('SIGKILL');
    await waitFor(
      's3 restarted',
      () => s3.starts() > starts && (s3.output().match(/Password verified locally for node s3/g) ?? []).length === 2,
      30_000,
      s3.output,
    );
    await waitFor('the Warning Event', async () => (await reasons()).length === 2, 30_000);
    expect((await reasons())[1]).toBe(
      'Warning NodePasswordValidationFailed: Deferred node password secret validation failed: unable to verify password for node s3: hash does not match',
    );
    await waitFor(
      's3 serves',
      () => s3.output().includes('k3s is up and running') && s3.output().split('k3s is up and running').length === 3,
      30_000,
      s3.output,
    );
  }, 90_000);

  it('deleting a Node removes that server etcd member; the server then rejoins through its tombstone', async () => {
    const { core: api } = core(servers[0]);
    await api.deleteNode({ name: 's3' });
    await waitFor('2 voters', async () => (await voters(servers[0])) === 2, 20_000);
    await waitFor('s3 reports its removal', () => /permanently removed/.test(servers[2].output()), 30_000);
    // Restarted (Restart=always), the removed server finds its tombstone, moves its data aside and rejoins.
    await waitFor(
      's3 rejoined',
      async () => servers[2].output().includes('tombstone file has been detected, removing data dir to rejoin the cluster') && (await voters(servers[0])) === 3,
      60_000,
      servers[2].output,
    );
  }, 120_000);
});
