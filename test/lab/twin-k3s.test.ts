// The k3s twin in the lab, by hand as an operator would do it (shell over SSH, systemd units,
// config.yaml, journalctl), without the engine: an HA cluster of 3 servers on real etcd, the failures a
// joiner logs, quorum loss and recovery, snapshot and restore.
import { beforeAll, expect, it } from 'vitest';
import { fault, hosts, paths } from '../../lab/api.ts';
import { installTwin } from '../../lab/twin/build.ts';
import { hostNow, installOnHost, journal, resetHost, startK3s, stopAndWipe, sudo, writeConfig } from '../../lab/twin/lab-hosts.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, holdLab } from '../support/lab.ts';
import { hostHttp } from '../support/host-http.ts';
import { LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';

const [S1, S2, S3] = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
let addr: Record<string, string>;
let vip: string;
let token = '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const base = () => `tls-san:\n  - ${vip}\nflannel-backend: none\ndisable-network-policy: true\ndisable-kube-proxy: true\n`;
const joinerConfig = (extra = '') => `${base()}server: https://${addr[S1]}:6443\ntoken: ${token}\n${extra}`;

async function kubectl(host: string, args: string, allowFail = false) {
  return sudo(host, `k3s kubectl ${args}`, undefined, allowFail);
}

async function voters(host: string): Promise<number> {
  const out = (await sudo(host, `ETCDCTL_API=3 ${LAB_TOOLS_DIR}/etcdctl member list -w json`)).stdout;
  return (JSON.parse(out).members ?? []).filter((m: any) => !m.isLearner && m.name).length;
}

/** Polls k3s's journal on a host until it shows `text` (failures repeat every 5 s under Restart=always). */
async function journalShows(host: string, since: number, text: string, timeoutMs = 60_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const j = await journal(host, since);
    if (j.includes(text) || Date.now() > end) return j;
    await sleep(1000);
  }
}

async function startJoiner(host: string, config: string): Promise<number> {
  await stopAndWipe(host);
  await writeConfig(host, config);
  const since = await hostNow(host);
  await startK3s(host, true);
  return since;
}

describeAsRoot('k3s twin in the lab, by hand', () => {
  beforeAll(async () => {
    await ensureLab();
    addr = Object.fromEntries(hosts().map((h) => [h.name, h.address]));
    vip = addr[S1].replace(/\.\d+$/, '.9');
    const k3s = await installTwin(paths.artifacts);
    for (const h of [S1, S2, S3]) {
      await resetHost(h);
      await installOnHost(h, k3s);
      await sudo(h, 'systemctl enable k3s 2>/dev/null; true');
    }
  }, 300_000);

  it('a joiner whose founder is unreachable logs "failed to get CA certs" and systemd restarts it every 5 s', async () => {
    token = 'K10' + '0'.repeat(64) + '::server:placeholder';
    const since = await startJoiner(S2, joinerConfig());
    const j = await journalShows(S2, since, 'dial tcp');
    expect(j).toContain(`failed to get CA certs: Get \\"https://${addr[S1]}:6443/cacerts\\": dial tcp ${addr[S1]}:6443: connect: connection refused`);
    await sleep(7000);
    const restarts = Number((await sudo(S2, 'systemctl show -p NRestarts --value k3s')).stdout.trim());
    expect(restarts).toBeGreaterThanOrEqual(1);
    await stopAndWipe(S2);
  }, 120_000);

  it('founder: cluster-init, READY only once the API answers, k3s.yaml 0600, token file', async () => {
    await writeConfig(S1, `${base()}cluster-init: true\n`);
    const r = await startK3s(S1);
    expect(r.code).toBe(0);
    expect((await sudo(S1, 'systemctl is-active k3s')).stdout.trim()).toBe('active');
    // READY=1 came after the API answered: a readyz right after `systemctl start` returned is ok.
    expect((await kubectl(S1, "get --raw='/readyz'")).stdout.trim()).toBe('ok');
    expect((await sudo(S1, 'stat -c %a /etc/rancher/k3s/k3s.yaml')).stdout.trim()).toBe('600');
    token = (await sudo(S1, 'cat /var/lib/rancher/k3s/server/token')).stdout.trim();
    expect(token).toMatch(/^K10[0-9a-f]{64}::server:/);
    const j = await journal(S1);
    const order = ['ETCD server is now running', 'Kube API server is now running', 'k3s is up and running'].map((m) => j.indexOf(m));
    expect(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]))).toBe(true);
  }, 120_000);

  it('wrong token: "token CA hash does not match the Cluster CA certificate hash"', async () => {
    const good = token;
    token = 'K10' + 'f'.repeat(64) + good.slice(67);
    const since = await startJoiner(S2, joinerConfig());
    token = good;
    const j = await journalShows(S2, since, 'token CA hash');
    expect(j).toMatch(new RegExp(`token CA hash does not match the Cluster CA certificate hash: f{64} != ${good.slice(3, 67)}`));
    await stopAndWipe(S2);
  }, 120_000);

  it('critical configuration mismatch names the flag, then refuses', async () => {
    const since = await startJoiner(S2, joinerConfig().replace('flannel-backend: none', 'flannel-backend: vxlan'));
    const j = await journalShows(S2, since, 'critical configuration value mismatch between servers');
    expect(j).toContain('critical configuration mismatched: flannel-backend');
    expect(j).toContain('critical configuration value mismatch between servers');
    await stopAndWipe(S2);
  }, 120_000);

  it('etcd peer port blocked: "etcd cluster join failed: cannot fetch cluster info from peer urls"; joins once unblocked', async () => {
    const release = await holdLab();
    try {
      await fault(S1, 'block-port', '2380');
      const since = await startJoiner(S2, joinerConfig());
      const j = await journalShows(S2, since, 'cannot fetch cluster info from peer urls');
      expect(j).toContain('etcd cluster join failed: cannot fetch cluster info from peer urls');
    } finally {
      await fault(S1, 'unblock-port', '2380');
      release();
    }
    // Restart=always retries every 5 s; the member added as a learner is recognised as itself.
    const end = Date.now() + 90_000;
    while ((await voters(S1)) < 2 && Date.now() < end) await sleep(2000);
    expect(await voters(S1)).toBe(2);
  }, 180_000);

  it('a server named like an existing member: "duplicate node name found"', async () => {
    const since = await startJoiner(S3, joinerConfig(`node-name: ${S2}\n`));
    const j = await journalShows(S3, since, 'duplicate node name');
    expect(j).toContain('etcd cluster join failed: duplicate node name found, please use a unique name for this node');
    await stopAndWipe(S3);
  }, 120_000);

  it('third server joins; 3 etcd voters; real kubectl lists 3 nodes through every server; readyz ok', async () => {
    await writeConfig(S3, joinerConfig());
    const r = await startK3s(S3);
    if (r.code !== 0) {
      // A join right after a promotion can be refused ("unhealthy cluster"); systemd restarts it in 5 s
      // (the voter count below says whether it came up).
      await sleep(12_000);
    }
    expect(await voters(S1)).toBe(3);
    for (const h of [S1, S2, S3]) {
      const nodes = (await kubectl(h, 'get nodes -o name')).stdout.trim().split('\n').sort();
      expect(nodes).toEqual([`node/${S1}`, `node/${S2}`, `node/${S3}`]);
      expect((await kubectl(h, "get --raw='/readyz'")).stdout.trim()).toBe('ok');
      // EtcdIsVoter is set by the etcd leader's 15 s tick, from the member list as it was when the tick began.
      const query = `get node ${h} -o jsonpath='{.status.conditions[?(@.type=="EtcdIsVoter")].status}'`;
      const end = Date.now() + 45_000;
      let voter: string;
      while ((voter = (await kubectl(h, query)).stdout.trim()) !== 'True' && Date.now() < end) await sleep(2000);
      expect(voter).toBe('True');
    }
    const ready = (await kubectl(S1, `get node ${S1} -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'`)).stdout;
    expect(ready).toContain('cni plugin not initialized');
  }, 180_000);

  it('/readyz is 401 anonymously; TLS verifies through a tls-san address and fails outside tls-san', async () => {
    const anon = await sudo(S2, hostHttp(`https://${addr[S1]}:6443/readyz`, { insecure: true }));
    expect(anon.stdout).toBe('401');
    const ca = '/var/lib/rancher/k3s/server/tls/server-ca.crt';
    const viaSan = await sudo(S2, hostHttp(`https://${vip}:6443/cacerts`, { ca, connectTo: `${addr[S1]}:6443` }), undefined, true);
    expect(viaSan.stdout).toBe('200');
    const outside = addr[S1].replace(/\.\d+$/, '.250');
    const viaOther = await sudo(S2, hostHttp(`https://${outside}:6443/cacerts`, { ca, connectTo: `${addr[S1]}:6443` }), undefined, true);
    // the certificate does not name that address
    expect(viaOther.code).toBe(1);
    expect(viaOther.stderr).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
  }, 60_000);

  it('quorum: 2 of 3 servers stopped → API requests fail; started again → API recovers, nothing lost', async () => {
    await kubectl(S1, 'create configmap before-quorum-loss --from-literal=k=v');
    const release = await holdLab();
    try {
      await fault(S2, 'stop');
      await fault(S3, 'stop');
      const r = await kubectl(S1, 'get configmap before-quorum-loss --request-timeout=15s', true);
      expect(r.code).not.toBe(0);
    } finally {
      await fault(S2, 'start');
      await fault(S3, 'start');
      release();
    }
    const end = Date.now() + 120_000;
    let got = await kubectl(S1, 'get configmap before-quorum-loss -o jsonpath={.data.k}', true);
    while (got.stdout !== 'v' && Date.now() < end) {
      await sleep(2000);
      got = await kubectl(S1, 'get configmap before-quorum-loss -o jsonpath={.data.k}', true);
    }
    expect(got.stdout).toBe('v');
    expect(await voters(S1)).toBe(3);
  }, 300_000);

  it('snapshot and restore: 50 ConfigMaps back after cluster-reset on one server and a rejoin of the others', async () => {
    const manifest = Array.from(
      { length: 50 },
      (_, i) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dr-${i}\n  labels: {set: dr}\ndata:\n  i: "${i}"\n`,
    ).join('---\n');
    await sudo(S1, 'cat > /tmp/dr.yaml && k3s kubectl apply -f /tmp/dr.yaml >/dev/null', manifest);
    expect((await kubectl(S1, 'get configmaps -l set=dr -o name')).stdout.trim().split('\n')).toHaveLength(50);
    await sudo(S1, 'k3s etcd-snapshot save');
    const ls = (await sudo(S1, 'k3s etcd-snapshot ls')).stdout;
    const file = /file:\/\/(\S+)/.exec(ls)?.[1];
    expect(file).toMatch(/^\/var\/lib\/rancher\/k3s\/server\/db\/snapshots\/on-demand-k3s-lab-1-\d+$/);
    await kubectl(S1, 'delete configmaps -l set=dr');
    expect((await kubectl(S1, 'get configmaps -l set=dr -o name')).stdout.trim()).toBe('');

    for (const h of [S3, S2, S1]) await sudo(h, 'systemctl stop k3s');
    const reset = await sudo(S1, `k3s server --cluster-reset --cluster-reset-restore-path=${file} 2>&1`, undefined, true);
    expect(reset.stdout).toContain('Managed etcd cluster membership has been reset, restart without --cluster-reset flag now.');
    expect(reset.code).toBe(0);
    expect((await startK3s(S1)).code).toBe(0);
    for (const h of [S2, S3]) {
      await sudo(h, 'rm -rf /var/lib/rancher/k3s/server/db');
      // Refused at once, systemd restarts it in 5 s: the voter count below says whether it came up.
      if ((await startK3s(h)).code !== 0) await sleep(12_000);
    }
    const end = Date.now() + 60_000;
    while ((await voters(S1)) < 3 && Date.now() < end) await sleep(2000);
    expect(await voters(S1)).toBe(3);
    expect((await kubectl(S2, 'get configmaps -l set=dr -o name')).stdout.trim().split('\n')).toHaveLength(50);
  }, 400_000);
});
