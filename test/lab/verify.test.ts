// `bootstrap verify lab` after a cold build through Cilium: every check passes with a row per host; the
// failover drill moves the VIP and the drilled server rejoins as a voter; and each cause the lab can
// produce is named with its host, within its gate's budget. Hosts are healed after each case.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { fault, host, hostExec } from '../../lab/api.ts';
import { NET } from '../../lab/config.ts';
import { bootstrap, freshStateDir, resetCluster, voters } from '../support/cluster.ts';
import { repoRoot } from '../support/cli.ts';
import { secretLeaks } from '../support/secret-scan.ts';
import { describeAsRoot } from '../support/env.ts';
import { labInventory } from '../support/lab-inventory.ts';
import { ensureLab, hosts } from '../support/lab.ts';

const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'];
/** etcd's v3 JSON gateway of the twin's etcd on a server (plain http in the lab): the fault injection needs no etcdctl on the host. */
async function etcdGateway(server: string, path: string, body: unknown): Promise<{ ok: boolean; json: any }> {
  const res = await fetch(`http://${host(server).address}:2379${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { ok: res.ok, json: await res.json().catch(() => ({})) };
}
/** Every host of the lab, servers then agents (the shared lab has an agent): nodes-ready and cilium-agents have a row for each. */
const ALL = () => hosts().map((h) => h.name);
const kubectl = (args: string) => hostExec('k3s-lab-1', `k3s kubectl ${args}`);
const HOLDER = "get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 2 s until it is true; throws `what` after `ms`, with what `seen` says was seen last. */
async function until(what: string, probe: () => Promise<boolean>, ms = 180_000, seen?: () => string) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await probe()) return;
    await sleep(2_000);
  }
  throw new Error(`${what}: not within ${ms / 1000} s${seen ? `; last seen: ${seen()}` : ''}`);
}

/** The cilium DaemonSet rolled out its current template on every node (the twin reports what kubectl reads). */
async function ciliumRolledOut() {
  const r = await kubectl('-n kube-system rollout status daemonset/cilium --timeout=240s');
  expect(r.code, r.stderr).toBe(0);
}

interface VerifyRun {
  code: number | null;
  stdout: string;
  events: any[];
}

/** `bootstrap verify lab --json`; rejects when its output or run log leaked a secret (as every lab run). */
function verify(extra: string[], opts: { stateDir: string; inventory: string }): Promise<VerifyRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/bootstrap.js'), 'verify', 'lab', '--inventory', opts.inventory, '--json', ...extra], {
      cwd: repoRoot,
      env: { ...process.env, BOOTSTRAP_STATE_DIR: opts.stateDir, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      let leaks: string[];
      try {
        leaks = secretLeaks({ stdout, stderr }, opts.stateDir, opts.inventory);
      } catch (err) {
        reject(err);
        return;
      }
      if (leaks.length) return reject(new Error(`verify leaked secrets:\n${leaks.join('\n')}`));
      resolve({
        code,
        stdout,
        events: stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l)),
      });
    });
  });
}

const stops = (r: VerifyRun) => r.events.filter((e) => e.type === 'stopped').map((e) => e.error);
const rows = (r: VerifyRun, check: string) => r.events.filter((e) => e.type === 'check' && e.check === check);

/** The failed gate (or the drill's action) ended within its budget (the gate-start or action-start event carries the budget). */
function expectWithinBudget(r: VerifyRun) {
  const failed = r.events.find((e) => (e.type === 'gate-end' || e.type === 'action-end') && e.status === 'failed');
  const started = r.events.find((e) =>
    failed?.type === 'gate-end' ? e.type === 'gate-start' && e.gate === failed?.gate : e.type === 'action-start' && e.step === failed?.step,
  );
  expect(failed, 'a gate or an action failed').toBeDefined();
  expect(started.budgetMs).toBeGreaterThan(0);
  expect(failed.durationMs).toBeLessThanOrEqual(started.budgetMs);
}

async function untilVoters(ms = 120_000) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    const v = await voters().catch(() => ({}) as Record<string, string>);
    const api = await Promise.all(
      SERVERS.map((s) => hostExec('k3s-lab-1', `k3s kubectl --server https://${host(s).address}:6443 get --raw /readyz --request-timeout=3s`)),
    );
    if (SERVERS.every((s) => v[s] === 'True') && api.every((a) => a.stdout.trim() === 'ok')) return;
    await new Promise((r) => setTimeout(r, 2_000));
  }
  throw new Error('the servers did not all come back as ready voters');
}

describeAsRoot('bootstrap verify lab', () => {
  const stateDir = freshStateDir();
  let inventory: string;
  const heal: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    inventory = labInventory();
    const built = await bootstrap(['--until', 'cilium'], { stateDir, inventory });
    expect(built.code, built.stdout + built.stderr).toBe(0);
  }, 600_000);

  afterEach(async () => {
    while (heal.length) await heal.pop()!();
    await untilVoters();
  }, 240_000);

  it('passes every check with a row per host, reading only (no lock, check mode)', async () => {
    const r = await verify([], { stateDir, inventory });
    expect(stops(r), JSON.stringify(stops(r))).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.events[0]).toMatchObject({ type: 'run-start', check: true, phases: ['verify'] });
    expect(rows(r, 'etcd-voters').map((e) => [e.host, e.ok])).toEqual(SERVERS.map((s) => [s, true]));
    for (const check of ['nodes-ready', 'cilium-agents', 'cilium-node-health']) {
      expect(rows(r, check).map((e) => [e.host, e.ok])).toEqual(ALL().map((s) => [s, true]));
    }
    // From every server, and from the engine through its SSH connection to the founder.
    expect(rows(r, 'api-ready').map((e) => [e.host, e.ok])).toEqual([...SERVERS, 'operator'].map((s) => [s, true]));
    expect(rows(r, 'api-ready')[0].detail).toContain(`VIP ${NET.vip}`);
    expect(rows(r, 'api-ready').at(-1).detail).toBe(
      `TLS verified against the cluster CA via VIP ${NET.vip}, ${SERVERS.map((s) => `${s} ${host(s).address}`).join(', ')} (through k3s-lab-1)`,
    );
    expect(rows(r, 'cilium-agents')[0].detail).toMatch(/kube-proxy replacement True/);
    expect(rows(r, 'cilium-node-health')[0].detail).toBe(
      `reaches ${ALL()
        .filter((h) => h !== ALL()[0])
        .join(', ')}`,
    );
    expect(rows(r, 'vip-lease')).toEqual([expect.objectContaining({ ok: true })]);
    expect(SERVERS).toContain(rows(r, 'vip-lease')[0].host);
    expect(rows(r, 'coredns')).toEqual([expect.objectContaining({ ok: true, detail: 'deployment coredns 1/1 ready' })]);
    expect(r.events.some((e) => (e.type === 'gate-start' && e.gate === 'failover-drill') || (e.type === 'step-start' && e.step === 'failover-drill'))).toBe(
      false,
    );
  }, 300_000);

  it('--drill stops k3s on the VIP holder, the VIP moves within the lease timing, the server rejoins as a voter', async () => {
    const before = (await hostExec('k3s-lab-1', "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
    const r = await verify(['--drill'], { stateDir, inventory });
    expect(stops(r), JSON.stringify(stops(r))).toEqual([]);
    expect(r.code).toBe(0);
    const drill = rows(r, 'failover-drill');
    expect(drill).toHaveLength(1);
    expect(drill[0]).toMatchObject({ host: before, ok: true });
    const seconds = Number(/in (\d+\.\d) s/.exec(drill[0].detail)?.[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(35);
    expect(drill[0].detail).toMatch(new RegExp(`VIP moved from ${before} to k3s-lab-\\d`));
    expect((await hostExec(before, 'systemctl is-active k3s')).stdout.trim()).toBe('active');
    expect(await voters()).toEqual(Object.fromEntries(SERVERS.map((s) => [s, 'True'])));
  }, 600_000);

  it('an etcd member of no server is ETCD_MEMBERS_MISMATCH naming the extra member', async () => {
    const ghost = 'http://10.77.250.99:2380';
    // etcd refuses a reconfiguration until every voter has been connected for 5 s ("unhealthy cluster"),
    // as after the drill's restart: retry for a while.
    const addGhost = () => etcdGateway('k3s-lab-1', '/v3/cluster/member/add', { peerURLs: [ghost], isLearner: true });
    let add = await addGhost();
    for (let i = 0; i < 15 && !add.ok && /unhealthy cluster/.test(JSON.stringify(add.json)); i++) {
      await new Promise((r) => setTimeout(r, 2_000));
      add = await addGhost();
    }
    expect(add.ok, JSON.stringify(add.json)).toBe(true);
    heal.push(async () => {
      const list = await etcdGateway('k3s-lab-1', '/v3/cluster/member/list', {});
      for (const m of (list.json.members ?? []).filter((m: any) => (m.peerURLs ?? []).includes(ghost)))
        await etcdGateway('k3s-lab-1', '/v3/cluster/member/remove', { ID: m.ID });
    });
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r)).toEqual([expect.objectContaining({ cause: 'ETCD_MEMBERS_MISMATCH', host: 'k3s-lab-1' })]);
    expect(stops(r)[0].evidence.seen).toMatch(/extra: \(unstarted\) [0-9a-f]+ http:\/\/10\.77\.250\.99:2380 learner/);
    expect(
      rows(r, 'etcd-voters')
        .filter((e) => !e.ok)
        .map((e) => e.detail),
    ).toEqual([expect.stringContaining('10.77.250.99')]);
    expectWithinBudget(r);
  }, 300_000);

  it('a Node the inventory does not list (a retired host still registered) is NODE_NOT_IN_INVENTORY, named with its role', async () => {
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'k3s-lab-retired', labels: { 'kubernetes.io/hostname': 'k3s-lab-retired' } },
      spec: { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }] },
    };
    heal.push(() => hostExec('k3s-lab-1', 'k3s kubectl delete node k3s-lab-retired --ignore-not-found --wait=false'));
    const made = await hostExec('k3s-lab-1', `echo '${JSON.stringify(node)}' | k3s kubectl create -f -`);
    expect(made.code, made.stderr).toBe(0);
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r)).toContainEqual(expect.objectContaining({ cause: 'NODE_NOT_IN_INVENTORY', host: 'k3s-lab-retired' }));
    const stop = stops(r).find((s: any) => s.cause === 'NODE_NOT_IN_INVENTORY');
    expect(stop.evidence.seen).toMatch(/^k3s-lab-retired: an agent Node not in the inventory \(/);
    expect(rows(r, 'nodes-ready')).toContainEqual(expect.objectContaining({ host: 'k3s-lab-retired', ok: false }));
    expectWithinBudget(r);
  }, 300_000);

  it('CoreDNS scaled to zero is COREDNS_NOT_READY', async () => {
    heal.push(() => hostExec('k3s-lab-1', `k3s kubectl -n kube-system patch deployment coredns --type merge -p '{"spec":{"replicas":1}}'`));
    await hostExec('k3s-lab-1', `k3s kubectl -n kube-system patch deployment coredns --type merge -p '{"spec":{"replicas":0}}'`);
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r)).toEqual([expect.objectContaining({ cause: 'COREDNS_NOT_READY', host: 'k3s-lab-1' })]);
    expect(stops(r)[0].evidence.seen).toBe('deployment kube-system/coredns is scaled to 0 replicas');
    expectWithinBudget(r);
    // A spec of zero replicas is not waited out: nothing in the cluster scales it back.
    expect(r.events.find((e) => e.type === 'gate-end' && e.gate === 'coredns').durationMs).toBeLessThan(15_000);
  }, 300_000);

  it('--drill with kube-vip on the holder alone: the VIP cannot move, FAILOVER_FAILED, and k3s runs again', async () => {
    const kubectl = (args: string) => hostExec('k3s-lab-1', `k3s kubectl ${args}`);
    const holder = (await kubectl("get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
    heal.push(async () => {
      await kubectl(`label node ${holder} verify-drill-`);
      await kubectl(`-n kube-system patch daemonset kube-vip-ds --type json -p '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]'`);
      // Until kube-vip runs on every server again.
      for (let i = 0; i < 60; i++) {
        const ready = await kubectl("-n kube-system get daemonset kube-vip-ds -o jsonpath='{.status.numberReady}'");
        if (ready.stdout.trim() === String(SERVERS.length)) return;
        await new Promise((r) => setTimeout(r, 2_000));
      }
    });
    await kubectl(`label node ${holder} verify-drill=keep`);
    await kubectl(`-n kube-system patch daemonset kube-vip-ds --type merge -p '{"spec":{"template":{"spec":{"nodeSelector":{"verify-drill":"keep"}}}}}'`);
    // The patch rolls every kube-vip pod, the holder's too: while they roll, another server's may hold the lease
    // for a moment. The drill starts from the settled state: one pod, on the holder, holding the lease.
    await until(`kube-vip on ${holder} alone, holding the lease`, async () => {
      const ds = JSON.parse((await kubectl('-n kube-system get daemonset kube-vip-ds -o json')).stdout || '{}').status ?? {};
      const lease = (await kubectl("get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
      return ds.desiredNumberScheduled === 1 && ds.numberReady === 1 && ds.updatedNumberScheduled === 1 && lease === holder;
    });
    const r = await verify(['--drill'], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r)).toEqual([expect.objectContaining({ cause: 'FAILOVER_FAILED', host: holder })]);
    expect(stops(r)[0].message).toBe(`The VIP did not move from ${holder} within 35 s (lease 15 s plus a margin)`);
    expect(rows(r, 'vip-lease')).toEqual([expect.objectContaining({ host: holder, ok: true })]);
    expectWithinBudget(r);
    expect((await hostExec(holder, 'systemctl is-active k3s')).stdout.trim()).toBe('active');
  }, 400_000);

  it("k3s stopped on one server is named with that server's address", async () => {
    const holder = (await hostExec('k3s-lab-1', "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
    const victim = SERVERS.filter((s) => s !== holder && s !== 'k3s-lab-1')[0];
    heal.push(() => hostExec(victim, 'systemctl start k3s'));
    await hostExec(victim, 'systemctl stop k3s');
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    const causes = stops(r);
    expect(causes.length).toBeGreaterThan(0);
    for (const c of causes) expect(c).toMatchObject({ host: victim });
    const api = causes.find((c) => c.cause === 'API_UNREACHABLE_VIA');
    const node = causes.find((c) => c.cause === 'NODE_NOT_READY');
    expect(api ?? node).toBeDefined();
    if (api) {
      expect(api.message).toContain(`${host(victim).address}:6443`);
      expect(api.message).toMatch(/from k3s-lab-1/);
    }
    expectWithinBudget(r);
  }, 300_000);

  it('the kube-vip lease held by no server (a retired name) is VIP_LEASE_NOT_HELD, although the VIP answers', async () => {
    const holder = (await kubectl(HOLDER)).stdout.trim();
    // The VIP as kube-vip put it on the holder: address/prefix and interface.
    const vipLine = (await hostExec(holder, `ip -o -4 addr show | grep -F ' ${NET.vip}/'`)).stdout.trim();
    const [, dev, cidr] = /^\d+:\s+(\S+)\s+inet\s+(\S+)/.exec(vipLine) ?? [];
    expect(cidr, vipLine).toMatch(new RegExp(`^${NET.vip.replaceAll('.', '\\.')}/\\d+$`));
    heal.push(async () => {
      await hostExec(holder, `ip addr del ${cidr} dev ${dev}`, { allowFail: true });
      await kubectl(`-n kube-system patch daemonset kube-vip-ds --type json -p '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]'`);
      // A new kube-vip takes the lease over once the retired holder's record stayed unchanged for 15 s.
      await until('kube-vip holds the lease and answers on the VIP again', async () => {
        const now = (await kubectl(HOLDER)).stdout.trim();
        const vip = await hostExec('k3s-lab-2', `k3s kubectl --server https://${NET.vip}:6443 get --raw /livez --request-timeout=2s; true`);
        return SERVERS.includes(now) && vip.stdout.trim() === 'ok';
      });
    });
    // kube-vip stopped on every server (it gives the VIP up as it stops), the VIP kept on the old holder by
    // hand — as an address left behind would — and the lease naming a server that is gone.
    await kubectl(`-n kube-system patch daemonset kube-vip-ds --type merge -p '{"spec":{"template":{"spec":{"nodeSelector":{"verify-lease":"nowhere"}}}}}'`);
    let last = '';
    await until(
      'every kube-vip stopped',
      async () => {
        const scheduled = (await kubectl("-n kube-system get daemonset kube-vip-ds -o jsonpath='{.status.currentNumberScheduled}'")).stdout.trim();
        const still = await Promise.all(SERVERS.map((s) => hostExec(s, `ip -o -4 addr show | grep -cF ' ${NET.vip}/'; true`)));
        const pods = (await kubectl('-n kube-system get pods -l app.kubernetes.io/name=kube-vip-ds -o wide --no-headers')).stdout.trim();
        // A kube-vip still running somewhere renews the lease: its holder and renewTime say which.
        const lease = (await kubectl("get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity} {.spec.renewTime}'")).stdout.trim();
        last = `currentNumberScheduled ${scheduled || '(none)'}; the VIP on ${SERVERS.filter((_, i) => still[i].stdout.trim() !== '0').join(', ') || 'no server'}; pods: ${pods.replace(/\s+/g, ' ') || 'none'}; lease: ${lease || '(none)'}`;
        return scheduled === '0' && still.every((r) => r.stdout.trim() === '0');
      },
      180_000,
      () => last,
    );
    await hostExec(holder, `ip addr add ${cidr} dev ${dev}`);
    await kubectl(`-n kube-system patch lease plndr-cp-lock --type merge -p '{"spec":{"holderIdentity":"k3s-retired-4"}}'`);
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(rows(r, 'api-ready').every((e) => e.ok)).toBe(true);
    expect(stops(r)).toEqual([expect.objectContaining({ cause: 'VIP_LEASE_NOT_HELD', host: 'k3s-lab-1' })]);
    expect(stops(r)[0].evidence.seen).toBe('held by k3s-retired-4, which is no server of the inventory');
    expect(rows(r, 'vip-lease')).toEqual([expect.objectContaining({ ok: false, detail: 'held by k3s-retired-4, which is no server of the inventory' })]);
    expectWithinBudget(r);
  }, 400_000);

  it('agents repointed at a server address are AGENT_SERVICE_HOST_DRIFT, read from the running agents', async () => {
    const server = host('k3s-lab-2').address;
    heal.push(async () => {
      await kubectl(`-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST=${NET.vip}`);
      await ciliumRolledOut();
    });
    // A server's address works (its certificate names it), so the agents roll out Ready: only verify's
    // reading of the running agents shows they no longer dial the VIP.
    await kubectl(`-n kube-system set env daemonset/cilium -c cilium-agent KUBERNETES_SERVICE_HOST=${server}`);
    await ciliumRolledOut();
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    const causes = stops(r);
    expect(causes.map((c) => [c.cause, c.host])).toEqual(ALL().map((s) => ['AGENT_SERVICE_HOST_DRIFT', s]));
    for (const c of causes)
      expect(c.evidence.seen).toMatch(new RegExp(`^agent cilium-\\w+ dials ${server.replaceAll('.', '\\.')}, not the VIP ${NET.vip.replaceAll('.', '\\.')}$`));
    expect(rows(r, 'cilium-agents').map((e) => [e.host, e.ok])).toEqual(ALL().map((s) => [s, false]));
    expectWithinBudget(r);
  }, 600_000);

  it('4240/tcp blocked on one node is CILIUM_NODE_UNREACHABLE from every other node once a probe made after verify first read it failed too, naming the pair and the port', async () => {
    heal.push(() => fault('k3s-lab-2', 'unblock-port', '4240'));
    await fault('k3s-lab-2', 'block-port', '4240');
    const others = ALL().filter((h) => h !== 'k3s-lab-2');
    // Cilium reports what its prober last published (a round: 10 s × ln(1 + 8 addresses) at the lab's ratio 0):
    // a port blocked a moment ago shows at that pair's next probe, not before. Once every other node's report
    // shows it, verify still waits for a probe made after it first read the failure, then stops.
    const failing = async (h: string) => {
      const r = await hostExec(h, 'k3s crictl exec --name cilium-agent --state running -q cilium-health status -o json');
      const node = (JSON.parse(r.stdout || '{}').nodes ?? []).find((n: any) => n.name === 'k3s-lab-2');
      return Boolean(node?.host?.['primary-address']?.http?.status);
    };
    await until('every other node reporting k3s-lab-2 unreachable', async () => (await Promise.all(others.map(failing))).every(Boolean), 180_000);
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r).map((c) => [c.cause, c.host])).toEqual(others.map((h) => ['CILIUM_NODE_UNREACHABLE', h]));
    const ip = host('k3s-lab-2').address;
    for (const c of stops(r)) {
      expect(c.message).toBe(`Cilium on ${c.host} cannot reach k3s-lab-2 (${ip}) on 4240/tcp`);
      // The pair, the prober's error, the ports, and when the probe that settled it was made.
      expect(c.evidence.seen).toMatch(/ \(probed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/);
      expect(c.evidence.seen.replace(/ \(probed [^)]+\)$/, '')).toBe(
        `${c.host} → k3s-lab-2 (${ip}, host): Get "http://${ip}:4240/hello": dial tcp ${ip}:4240: connect: connection refused; open 4240/tcp between them`,
      );
    }
    expect(rows(r, 'cilium-node-health').map((e) => [e.host, e.ok])).toEqual(ALL().map((h) => [h, h === 'k3s-lab-2']));
    expectWithinBudget(r);
  }, 300_000);

  it('an agent running without kube-proxy replacement is KPR_MISMATCH, read from its status API', async () => {
    // A DaemonSet's pod is named after its node and template, so the one created again has the same name: its uid tells them apart.
    const agentOn = async (node: string): Promise<{ name: string; uid: string; ready: boolean }> => {
      const pods = JSON.parse((await kubectl('-n kube-system get pods -l k8s-app=cilium -o json')).stdout || '{"items":[]}').items;
      const p = pods.find((x: any) => x.spec?.nodeName === node && !x.metadata.deletionTimestamp);
      const ready = (p?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
      return { name: p?.metadata.name ?? '', uid: p?.metadata.uid ?? '', ready };
    };
    const kpr = (value: string) => kubectl(`-n kube-system patch configmap cilium-config --type merge -p '{"data":{"kube-proxy-replacement":"${value}"}}'`);
    /** Deletes the agent on k3s-lab-2 and waits until the DaemonSet's new one is Ready. */
    const restartAgent = async () => {
      const old = await agentOn('k3s-lab-2');
      await kubectl(`-n kube-system delete pod ${old.name}`);
      await until('a new Ready agent on k3s-lab-2', async () => {
        const now = await agentOn('k3s-lab-2');
        return now.uid !== '' && now.uid !== old.uid && now.ready;
      });
    };
    heal.push(async () => {
      await kpr('true');
      await restartAgent();
    });
    // The agent reads its configuration when it starts: one restarted after the change runs without it.
    await kpr('false');
    await restartAgent();
    const r = await verify([], { stateDir, inventory });
    expect(r.code).toBe(1);
    expect(stops(r)).toEqual([
      expect.objectContaining({ cause: 'KPR_MISMATCH', host: 'k3s-lab-2', message: 'The running Cilium agent on k3s-lab-2 does not replace kube-proxy' }),
    ]);
    expect(stops(r)[0].evidence.seen).toMatch(/^agent cilium-\w+ reports kube-proxy-replacement mode False$/);
    expect(rows(r, 'cilium-agents').map((e) => [e.host, e.ok])).toEqual(ALL().map((h) => [h, h !== 'k3s-lab-2']));
    expectWithinBudget(r);
  }, 600_000);
});
