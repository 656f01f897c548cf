// The gates that need nothing on a host beyond Debian and k3s: the VIP answer as k3s's kubectl prints it,
// the TLS handshake carried over an SSH forward (a real TLS server with a cluster-like CA), the operator's
// vantage in verify, and the k3s twin's crictl and /db/info as the engine reads them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { livezAnswer, livezCommand } from '../../phases/kube-vip/vip-gate.ts';
import { operatorVerdict } from '../../phases/verify/api-verdict.ts';
import { CILIUM_AGENT_COMMAND, CILIUM_HEALTH_COMMAND, CILIUM_STATUS_COMMAND, agentFound, agentLooks } from '../../phases/verify/checks.ts';
import { MEMBER_LIST_COMMAND, parseMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { nodeHealth } from '../../phases/verify/node-health.ts';
import { kprMode } from '../../phases/verify/cilium-health.ts';
import { handshakeVia } from '../../src/kube/handshake.ts';
import type { Remote } from '../../src/transport/types.ts';
import { serveStatus, agentContainer } from '../../lab/twin/addons/cilium/status-api.ts';
import { runCrictl, CILIUM_SOCKET, HEALTH_SOCKET } from '../../lab/twin/crictl.ts';
import { serveHealth } from '../../lab/twin/addons/cilium/health.ts';
import { ensureCAs, issueServing, tlsPaths } from '../../lab/twin/pki.ts';
import { dbInfoJson } from '../../lab/twin/server/supervisor.ts';

describe('the VIP as k3s kubectl answers', () => {
  it('runs k3s kubectl through the VIP, no curl', () => {
    expect(livezCommand('10.0.0.9', 6443)).toBe('k3s kubectl --server https://10.0.0.9:6443 get --raw /livez --request-timeout=5s');
  });

  it('"ok" and any HTTP error are answers; x509 words are a certificate failure; a refusal is not', () => {
    expect(livezAnswer({ code: 0, stdout: 'ok', stderr: '' })).toEqual({ ok: true });
    expect(livezAnswer({ code: 1, stdout: '', stderr: 'Error from server (Forbidden): forbidden: User "system:anonymous" cannot get path "/livez"' })).toEqual({
      ok: true,
    });
    // Go 1.20+ (real kubectl of k3s v1.33) and older Go (Debian's kubectl) word the SAN failure differently.
    const san =
      'Unable to connect to the server: tls: failed to verify certificate: x509: certificate is valid for 10.43.0.1, 127.0.0.1, 10.0.0.11, not 10.0.0.9';
    expect(livezAnswer({ code: 1, stdout: '', stderr: san })).toEqual({ ok: false, certificate: true, said: san });
    expect(livezAnswer({ code: 1, stdout: '', stderr: 'Unable to connect to the server: x509: certificate signed by unknown authority' })).toMatchObject({
      ok: false,
      certificate: true,
    });
    // As the lab's kubectl (Debian's 1.20, Go 1.19) printed them on a lab server.
    expect(
      livezAnswer({
        code: 1,
        stdout: '',
        stderr:
          'Unable to connect to the server: x509: certificate is valid for 10.77.12.10, 10.77.12.11, 10.77.12.12, 10.77.12.9, 127.0.0.1, ::1, 10.43.0.1, not 127.0.0.2',
      }),
    ).toMatchObject({ ok: false, certificate: true });
    expect(
      livezAnswer({
        code: 1,
        stdout: '',
        stderr: 'Unable to connect to the server: net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)',
      }),
    ).toMatchObject({ ok: false, certificate: false });
    const refused = 'The connection to the server 10.0.0.9:6443 was refused - did you specify the right host or port?';
    expect(livezAnswer({ code: 1, stdout: '', stderr: refused })).toEqual({ ok: false, certificate: false, said: refused });
    expect(livezAnswer({ code: null, stdout: '', stderr: '' })).toEqual({ ok: false, certificate: false, said: 'no answer' });
  });
});

describe('a TLS handshake through an SSH forward', () => {
  let dir: string;
  let server: Server;
  let port: number;
  let ca: string;
  /** A Remote whose forward dials from "the host" (here: this machine), as ssh direct-tcpip does. */
  const remote = (fail?: string): Remote => ({
    host: 's1',
    exec: async () => ({ command: '', stdout: '', stderr: '', code: 0, durationMs: 0 }),
    close: async () => undefined,
    forward: (host, p) =>
      fail
        ? Promise.reject(new Error(fail))
        : new Promise((resolve, reject) => {
            const s = netConnect({ host, port: p }, () => resolve(s));
            s.once('error', reject);
          }),
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'handshake-'));
    const p = tlsPaths(dir);
    ensureCAs(p);
    issueServing(p, ['127.0.0.1', 'localhost']);
    ca = readFileSync(p.serverCA, 'utf8');
    server = createServer({ cert: readFileSync(p.serving), key: readFileSync(p.servingKey) }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('verifies against the cluster CA and the address in the SANs', async () => {
    expect(await handshakeVia(remote(), '127.0.0.1', port, ca)).toEqual({ ok: true });
  });

  it('names a certificate that does not name the address, or another CA, as a certificate failure', async () => {
    // 127.0.0.2 reaches the same listener on Linux loopback, but the certificate does not name it.
    const other = await new Promise<Server>((r) => {
      const s = createServer({ cert: readFileSync(tlsPaths(dir).serving), key: readFileSync(tlsPaths(dir).servingKey) }, (c) => c.end());
      s.listen(0, '127.0.0.2', () => r(s));
    });
    const san = await handshakeVia(remote(), '127.0.0.2', (other.address() as { port: number }).port, ca);
    other.close();
    expect(san).toMatchObject({ ok: false, certificate: true });
    expect((san as { seen: string }).seen).toMatch(/^127\.0\.0\.2:\d+ through s1: .*(IP: 127\.0\.0\.2 is not in the cert's list|altnames)/i);
    const stranger = mkdtempSync(join(tmpdir(), 'handshake-ca-'));
    ensureCAs(tlsPaths(stranger));
    const wrongCa = await handshakeVia(remote(), '127.0.0.1', port, readFileSync(tlsPaths(stranger).serverCA, 'utf8'));
    rmSync(stranger, { recursive: true, force: true });
    expect(wrongCa).toMatchObject({ ok: false, certificate: true });
  });

  it('a forward the host refuses is no certificate failure, and says through which host', async () => {
    const r = await handshakeVia(remote('(SSH) Channel open failure: Connection refused'), '10.0.0.9', 6443, ca);
    expect(r).toEqual({ ok: false, certificate: false, seen: '10.0.0.9:6443 through s1: (SSH) Channel open failure: Connection refused' });
  });
});

describe("verify's operator vantage", () => {
  const targets = [
    { key: 'vip', label: 'VIP 10.0.0.9', address: '10.0.0.9' },
    { key: 's0', label: 's1 10.0.0.11', address: '10.0.0.11', owner: 's1' },
  ];
  it('one row for the operator; one API_UNREACHABLE_VIA per address, on its owner or the forwarding server', () => {
    const fine = operatorVerdict(targets, 6443, 's1', { vip: { ok: true }, s0: { ok: true } });
    expect(fine).toEqual({
      rows: [{ host: 'operator', ok: true, detail: 'TLS verified against the cluster CA via VIP 10.0.0.9, s1 10.0.0.11 (through s1)' }],
      stops: [],
    });
    const bad = operatorVerdict(targets, 6443, 's1', { vip: { ok: false, seen: '10.0.0.9:6443 through s1: no TLS handshake within 5 s' }, s0: { ok: true } });
    expect(bad.rows[0]).toMatchObject({ host: 'operator', ok: false });
    expect(bad.stops).toHaveLength(1);
    expect(bad.stops[0]).toMatchObject({
      causeId: 'API_UNREACHABLE_VIA',
      host: 's1',
      message: "The API does not answer with the cluster certificate via 10.0.0.9:6443 (the VIP) from the operator's side",
    });
  });
});

describe('what the engine runs on a host', () => {
  it('no curl, no etcdctl: only k3s (kubectl, crictl) and coreutils', () => {
    for (const c of [MEMBER_LIST_COMMAND, CILIUM_STATUS_COMMAND, CILIUM_HEALTH_COMMAND, CILIUM_AGENT_COMMAND, livezCommand('10.0.0.9', 6443)])
      expect(c).not.toMatch(/\b(curl|wget|etcdctl)\b|(^|[;|&]\s*)kubectl\b/);
  });
});

describe("the k3s twin's /db/info", () => {
  it('writes members as Go encodes etcdserverpb.Member (uint64 ID bare, empty fields omitted), which the engine reads back exactly', () => {
    const text = dbInfoJson([
      { id: '10501334649042878790', name: 's2-5e6f7a8b', peerURLs: ['http://10.0.0.12:2380'], clientURLs: ['http://10.0.0.12:2379'], isLearner: false },
      { id: '1234', name: '', peerURLs: ['http://10.0.0.99:2380'], clientURLs: [], isLearner: true },
    ]);
    expect(text).toBe(
      '{"members":[{"ID":10501334649042878790,"name":"s2-5e6f7a8b","peerURLs":["http://10.0.0.12:2380"],"clientURLs":["http://10.0.0.12:2379"]},{"ID":1234,"peerURLs":["http://10.0.0.99:2380"],"isLearner":true}]}\n',
    );
    expect(parseMembers(text).map((m) => m.id)).toEqual(['91bc3c398fb3c146', '4d2']);
    expect(readMembers({ code: 0, stdout: text })?.[1]).toMatchObject({ name: '', isLearner: true });
  });
});

describe("the k3s twin's crictl", () => {
  let root: string;
  let api: { close(): void } | undefined;
  const pod = { metadata: { name: 'cilium-x7k2p', namespace: 'kube-system', uid: '6f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f' } };
  const run = async (args: string[]) => {
    let out = '';
    let err = '';
    const code = await runCrictl(args, { out: (s) => (out += s), err: (s) => (err += s), now: () => new Date('2026-12-01T10:00:00Z') }, root);
    return { code, out, err };
  };

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'crictl-'));
  });
  afterAll(() => {
    api?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('lists nothing and refuses an exec in crictl and containerd words while no agent runs', async () => {
    expect(await run(['ps', '--name', 'cilium-agent', '--state', 'running', '-q'])).toEqual({ code: 0, out: '', err: '' });
    const r = await run(['exec', 'deadbeef', 'cilium-dbg', 'status', '-o', 'json']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'time="2026-12-01T10:00:00Z" level=fatal msg="execing command in container deadbeef: rpc error: code = NotFound desc = failed to find container \\"deadbeef\\" in store: not found"\n',
    );
    // With filter flags and nothing listed: crictl logs an error, prints exec's help on stdout and exits 0.
    const none = await run(['exec', '--name', 'cilium-agent', '--state', 'running', '-q', 'cilium-dbg', 'status', '-o', 'json']);
    expect(none.code).toBe(0);
    expect(none.err).toBe('time="2026-12-01T10:00:00Z" level=error msg="No containers found per filter flags"\n');
    expect(none.out).toMatch(
      /^NAME:\n   crictl exec - Run a command in a running container\n\nUSAGE:\n   crictl exec \[command options\] \[CONTAINER-ID\] COMMAND/,
    );
    expect(agentFound({ stdout: none.out, stderr: none.err, code: none.code })).toEqual({
      stdout: '',
      stderr:
        'time="2026-12-01T10:00:00Z" level=error msg="No containers found per filter flags"\nno running cilium-agent container on this node (k3s crictl exec --name cilium-agent --state running)\n',
      code: 1,
    });
  });

  it("finds the running agent's container and prints cilium-dbg status -o json from its socket", async () => {
    api = serveStatus(
      join(root, CILIUM_SOCKET),
      () => ({ kubeProxyReplacement: 'True', apiServer: 'https://10.0.0.9:6443', device: { name: 'eth0', ip: '10.0.0.11' }, ready: true }),
      agentContainer(pod, 'quay.io/cilium/cilium:v1.19.5'),
    );
    await new Promise((r) => setTimeout(r, 100));
    const ps = await run(['ps', '--name', 'cilium-agent', '--state', 'running', '-q']);
    expect(ps).toEqual({ code: 0, out: '6f1c2d3e4a5b6c7d8e9f0a1b2c3d4e5f\n', err: '' });
    expect((await run(['ps', '--name', 'kube-vip', '-q'])).out).toBe('');
    expect((await run(['ps', '--state', 'exited', '-q'])).out).toBe('');
    const table = await run(['ps']);
    expect(table.out.split('\n')[0]).toMatch(/^CONTAINER\s+IMAGE\s+CREATED\s+STATE\s+NAME\s+ATTEMPT\s+POD ID\s+POD$/);
    expect(table.out.split('\n')[1]).toMatch(
      /^6f1c2d3e4a5b6\s+quay\.io\/cilium\/cilium:v1\.19\.5\s+.*Running\s+cilium-agent\s+0\s+6f1c2d3e4a5b6\s+cilium-x7k2p$/,
    );
    const st = await run(['exec', ps.out.trim(), 'cilium-dbg', 'status', '-o', 'json']);
    expect(st.code).toBe(0);
    expect(kprMode(st.out)).toBe('True');
    const doc = JSON.parse(st.out);
    expect(doc['kube-proxy-replacement']).toMatchObject({ devices: ['eth0'], deviceList: [{ name: 'eth0', ip: ['10.0.0.11'] }] });
    // containerd resolves a unique prefix of the ID.
    expect((await run(['exec', '6f1c2d3e', 'cilium-dbg', 'status', '-o', 'json'])).code).toBe(0);
    // Filter flags instead of an ID: the same answer; without -q the container's ID and a colon first.
    const filtered = await run(['exec', '--name', 'cilium-agent', '--state', 'running', '-q', 'cilium-dbg', 'status', '-o', 'json']);
    expect(filtered).toEqual({ ...st, out: expect.any(String) });
    expect(kprMode(filtered.out)).toBe('True');
    const named = await run(['exec', '--name=cilium-agent', 'cilium-dbg', 'status', '-o', 'json']);
    expect(named.out.split('\n')[0]).toBe('6f1c2d3e4a5b6c7d8e9f0a1b2c3d4e5f:');
    expect((await run(['exec', '--name', 'kube-vip', '-q', 'cilium-dbg', 'status'])).err).toContain('No containers found per filter flags');
    expect((await run(['exec', '--state', 'exited', '-q', 'cilium-dbg', 'status'])).err).toContain('No containers found per filter flags');
    expect(await run(['exec', '6f1c2d3e', 'curl', 'http://localhost'])).toMatchObject({
      code: 126,
      err: expect.stringContaining('exec: "curl": executable file not found in $PATH'),
    });
  });

  it("prints cilium-health status [--probe] -o json from the health socket: Cilium's published report, each node greeted on 4240/tcp for real", async () => {
    const nodes = [
      { metadata: { name: 's1' }, status: { addresses: [{ type: 'InternalIP', address: '127.44.0.1' }] } },
      { metadata: { name: 's2' }, status: { addresses: [{ type: 'InternalIP', address: '127.44.0.2' }] } },
    ];
    const ctx = { node: 's1', ip: '127.44.0.1', store: { list: async () => ({ items: nodes }) } } as any;
    // Upstream's timing at 1/200: a round of 60 s × ln(1 + 4 addresses) is 0.48 s, a publication every 0.3 s.
    const health = serveHealth(ctx, join(root, HEALTH_SOCKET), { scale: 0.005 });
    try {
      // Before the first publication: no nodes (null), no interval yet; --probe probes nothing new.
      const early = await run(['exec', '6f1c2d3e', 'cilium-health', 'status', '--probe', '-o', 'json']);
      expect(early.code, early.err).toBe(0);
      expect(JSON.parse(early.out)).toMatchObject({ local: { name: 's1' }, nodes: null, probeInterval: '0s' });
      expect(nodeHealth(early.out, { self: 's1', expected: ['s2'] })).toMatchObject({ reached: [], unreachable: [], unprobed: ['s2'] });
      let r = early;
      for (let i = 0; i < 50 && !JSON.parse(r.out).nodes?.[1]?.host['primary-address'].http; i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await run(['exec', '6f1c2d3e', 'cilium-health', 'status', '-o', 'json']);
      }
      const doc = JSON.parse(r.out);
      // 60 s × ln(5) as Go prints a Duration (scaled runs publish the unscaled figure).
      expect(doc.probeInterval).toBe('1m36.566274746s');
      expect(doc.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      // s1 answers on its own 4240; nothing listens on s2's.
      const status = 'Get "http://127.44.0.2:4240/hello": dial tcp 127.44.0.2:4240: connect: connection refused';
      expect(nodeHealth(r.out, { self: 's1', expected: ['s2'] })).toEqual({
        local: 's1',
        reached: [],
        unreachable: [{ from: 's1', to: 's2', ip: '127.44.0.2', path: 'host', ports: ['4240/tcp'], status, lastProbed: expect.stringMatching(/Z$/) }],
        unprobed: [],
        timestamp: doc.timestamp,
        probeInterval: '1m36.566274746s',
      });
      expect(doc.nodes[0].host['primary-address'].http.latency).toBeGreaterThan(0);
      // --probe answers the same published report.
      expect(JSON.parse((await run(['exec', '6f1c2d3e', 'cilium-health', 'status', '--probe', '-o', 'json'])).out).timestamp).toBe(doc.timestamp);
    } finally {
      health.close();
    }
    const gone = await run(['exec', '6f1c2d3e', 'cilium-health', 'status', '-o', 'json']);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(
      /^Cannot get status: Get "http:\/\/localhost\/v1beta\/status": dial unix .*health\.sock: connect: (no such file or directory|connection refused)\n$/,
    );
  });

  it("runs the engine's one exec (sh -c in the container): the status and the health probe come back apart, each with its status", async () => {
    const script = CILIUM_AGENT_COMMAND.slice(CILIUM_AGENT_COMMAND.indexOf("sh -c '") + "sh -c '".length, -1);
    expect(CILIUM_AGENT_COMMAND).toBe(`${CILIUM_STATUS_COMMAND.slice(0, CILIUM_STATUS_COMMAND.indexOf('cilium-dbg'))}sh -c '${script}'`);
    // What crictl receives: the filter flags, then the command (one crictl start finds the container and runs it).
    const argv = ['exec', '--name', 'cilium-agent', '--state', 'running', '-q', 'sh', '-c', script];
    expect(CILIUM_AGENT_COMMAND).toBe(`k3s crictl ${argv.slice(0, -1).join(' ')} '${script}'`);
    const nodes = [
      { metadata: { name: 's1' }, status: { addresses: [{ type: 'InternalIP', address: '127.44.0.1' }] } },
      { metadata: { name: 's2' }, status: { addresses: [{ type: 'InternalIP', address: '127.44.0.2' }] } },
    ];
    const health = serveHealth({ node: 's1', ip: '127.44.0.1', store: { list: async () => ({ items: nodes }) } } as any, join(root, HEALTH_SOCKET), {
      scale: 0.005,
    });
    let both;
    try {
      let r = await run(argv);
      // Until the agent publishes its first round (at 1/200 of upstream's timing: well under a second).
      for (let i = 0; i < 50 && !agentLooks({ stdout: r.out, stderr: r.err, code: r.code }).health.stdout.includes('"http"'); i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await run(argv);
      }
      expect(r.code, r.err).toBe(0);
      both = agentLooks({ stdout: r.out, stderr: r.err, code: r.code });
    } finally {
      health.close();
    }
    // Each as the command alone would have answered: the whole JSON, no stderr, exit 0.
    expect(both.status).toMatchObject({ stderr: '', code: 0 });
    expect(kprMode(both.status.stdout)).toBe('True');
    expect(JSON.parse(both.status.stdout)['kube-proxy-replacement'].mode).toBe('True');
    expect(both.health).toMatchObject({ stderr: '', code: 0 });
    expect(nodeHealth(both.health.stdout)?.unreachable.map((u) => u.to)).toEqual(['s2']);
    // The health socket gone: the status still answers, the probe fails with cilium-health's words and exit 1.
    const again = await run(['exec', '6f1c2d3e', 'sh', '-c', script]);
    const half = agentLooks({ stdout: again.out, stderr: again.err, code: again.code });
    expect(half.status.code).toBe(0);
    expect(half.health).toMatchObject({ stdout: '', code: 1 });
    expect(half.health.stderr).toMatch(/^Cannot get status: Get "http:\/\/localhost\/v1beta\/status": dial unix .*health\.sock: connect: /);
  });

  it("sh -c in the container: the script's status is the exec's; commands the image lacks are not found", async () => {
    expect(await run(['exec', '6f1c2d3e', 'sh', '-c', 'echo out; echo err >&2; exit 3'])).toEqual({ code: 3, out: 'out\n', err: 'err\n' });
    expect((await run(['exec', '6f1c2d3e', 'sh', '-c', 'cilium-dbg version'])).err).toContain('exec: "cilium-dbg": executable file not found in $PATH');
    // cilium-dbg inside the script is the container's: the agent's status, then the script goes on.
    const st = await run(['exec', '6f1c2d3e', 'sh', '-c', 'cilium-dbg status -o json; echo "rc=$?"']);
    expect(st.code).toBe(0);
    expect(kprMode(st.out.slice(0, st.out.lastIndexOf('rc=')))).toBe('True');
    expect(st.out.endsWith('}\nrc=0\n')).toBe(true);
  });
});
