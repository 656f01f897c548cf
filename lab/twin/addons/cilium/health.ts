// cilium-health as the agent runs it, reduced to the node-to-node path the engine reads: a responder on
// the node's address, port 4240 (the chart's health port for cluster health checks; cilium/cilium
// Documentation/operations/system_requirements.rst: "4240/tcp cluster health checks (cilium-health)"),
// answering GET /hello; a prober in the background that greets every node's responder; and the health API on
// /var/run/cilium/health.sock, which `cilium-health status [--probe] -o json` reads.
//
// Timing and shapes as cilium/cilium v1.19 (@f12299b2, "Prepare for release v1.19.0-pre.4"; the same files at
// the v1.19 branch point 2ba24a2a) has them:
// - pkg/health/server/server.go runActiveServices: the report the API serves starts empty (no nodes); the nodes
//   known at start are probed at once; the report is replaced at every prober tick and every 60 s
//   (`time.NewTicker(60 * time.Second)`), each time with the results as they stand; nodes that appeared since are
//   added only then (setNodes), with no result until probed. GetStatusResponse: `timestamp` the start of the
//   current probe round (RFC 3339), `probeInterval` the interval as Go prints a Duration.
// - pkg/health/server/status.go: PUT /v1beta/status/probe answers FetchStatusResponse, "the results of the most
//   recent probe" — since Cilium 1.17 (commit 282dcb73, "pkg/health: rate limit health prober";
//   Documentation/operations/upgrade.rst) `--probe` no longer probes now; GET /v1beta/status the same.
// - pkg/health/server/prober.go: the interval is (10 + ratio × 100) s × ln(1 + IPs probed)
//   (setProbeInterval, pkg/backoff ClusterSizeDependantInterval; ratio `connectivity-probe-frequency-ratio` of
//   cilium-config, default 0.5: pkg/defaults ConnectivityProbeFrequencyRatio), and a round spreads its probes
//   over it (`rate.NewLimiter(per(p.probeIpCount, p.probeInterval), 1)`); httpProbe: GET
//   http://<node ip>:4240/hello, `latency` in ns on success, the client's error text as `status` on failure,
//   `lastProbed` RFC 3339 either way; pkg/health/probe HttpTimeout 10 s.
// Shapes: api/v1/health/openapi.yaml (HealthStatusResponse `timestamp`, `probeInterval`, `local`, `nodes`;
// NodeStatus `name`, `host`; PathStatus `ip`, `http`; ConnectivityStatus `latency`, `status`, `lastProbed`).
// Reachability is real: a TCP connection and an HTTP request to the peer's 4240, so a firewall between two lab
// hosts shows as it would.
// Not imitated: ICMP probes (`icmp`) and the health endpoint in the pod network (`health-endpoint`, through the
// VXLAN tunnel). Its address still counts among the IPs that set the interval (the chart enables endpoint
// health checking), so a round takes as long as upstream's and the host paths are spread over it alike.
import { mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { dirname } from 'node:path';
import { BUILTIN } from '../../api/resources.ts';
import type { NodeContext } from '../context.ts';

const HEALTH_PORT = 4240;
export const HEALTH_SOCKET = '/var/run/cilium/health.sock';
const NODES = BUILTIN.find((x) => x.resource === 'nodes')!;
const CONFIGMAPS = BUILTIN.find((x) => x.resource === 'configmaps')!;
/** pkg/health/probe HttpTimeout. */
const PROBE_TIMEOUT_MS = 10_000;
/** server.go runActiveServices: the report is refreshed this often besides the prober's own ticks. */
const REPORT_EVERY_MS = 60_000;
/** pkg/defaults ConnectivityProbeFrequencyRatio. */
const DEFAULT_RATIO = 0.5;
/** Addresses probed per node: its own and its health endpoint's. */
const IPS_PER_NODE = 2;

interface Peer {
  name: string;
  ip: string;
}

/** GET http://ip:4240/hello, as the prober's client does; "" on success, the error in Go's words otherwise. */
function greet(ip: string, port = HEALTH_PORT, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ status: string; latency?: number }> {
  const url = `http://${ip}:${port}/hello`;
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve(
          res.statusCode === 200
            ? { status: '', latency: Number(process.hrtime.bigint() - t0) }
            : { status: `[GET /hello][${res.statusCode}] getHello default` },
        ),
      );
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    req.on('error', (e: NodeJS.ErrnoException) => {
      const where = `Get "${url}": dial tcp ${ip}:${port}`;
      const why =
        e.code === 'ECONNREFUSED'
          ? 'connect: connection refused'
          : e.code === 'EHOSTUNREACH'
            ? 'connect: no route to host'
            : e.code === 'ETIMEDOUT'
              ? 'i/o timeout'
              : e.message;
      resolve({ status: `${where}: ${why}` });
    });
  });
}

async function peers(ctx: NodeContext): Promise<Peer[]> {
  const nodes = (await ctx.store.list(NODES)).items;
  return nodes
    .map((n: any) => ({ name: n.metadata.name, ip: (n.status?.addresses ?? []).find((a: any) => a.type === 'InternalIP')?.address }))
    .filter((p: any): p is Peer => typeof p.ip === 'string')
    .sort((a: Peer, b: Peer) => a.name.localeCompare(b.name));
}

/** Go's time.Duration.String() of a duration of at least a second: "21.972245773s", "1m57.5s", "1h2m0s". */
function goDuration(ns: bigint): string {
  const h = ns / 3_600_000_000_000n;
  const m = (ns / 60_000_000_000n) % 60n;
  const sec = ns % 60_000_000_000n;
  const whole = sec / 1_000_000_000n;
  const frac = (sec % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  const s = `${whole}${frac ? `.${frac}` : ''}s`;
  return h ? `${h}h${m}m${s}` : m ? `${m}m${s}` : s;
}

/** prober.go setProbeInterval: (10 + ratio × 100) s × ln(1 + IPs), in ns. */
function probeIntervalNs(ratio: number, ips: number): bigint {
  const base = (10 + ratio * 100) * 1e9;
  return BigInt(Math.trunc(ips === 0 ? base : base * Math.log1p(ips)));
}

/** RFC 3339 to the second, as Go's time.Format(time.RFC3339) prints a UTC time. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface PathResult {
  latency?: number;
  status?: string;
  lastProbed: string;
}

/** Upstream's timing, scaled (tests run it faster: `scale` 0.01 makes a minute 0.6 s). */
export interface HealthTiming {
  scale?: number;
}

export function serveHealth(ctx: NodeContext, socketPath: string, timing: HealthTiming = {}): { close(): void } {
  const scale = timing.scale ?? 1;
  const responder = http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '').split('?')[0] === '/hello') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
      return;
    }
    res.writeHead(404).end();
  });
  responder.on('error', () => undefined);
  responder.listen(HEALTH_PORT, ctx.ip);

  let stopped = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const after = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  // The prober's state: the nodes it knows (by name), each one's last result, the round's start and interval.
  let known: Peer[] = [];
  const results = new Map<string, PathResult>();
  let roundStart = Date.now();
  let intervalNs = probeIntervalNs(DEFAULT_RATIO, 0);
  const intervalMs = () => Number(intervalNs / 1_000_000n) * scale;
  // What the API serves until the first refresh: runActiveServices' first report, no nodes (`null`: the
  // field has no omitempty) and no interval yet.
  let report: any = { local: { name: ctx.node }, nodes: null, timestamp: rfc3339(roundStart), probeInterval: '0s' };

  /** cilium-config's connectivity-probe-frequency-ratio; outside [0, 1] or absent the default (config.go). */
  const ratio = async () => {
    try {
      const cm = await ctx.store.tryGet(CONFIGMAPS, 'kube-system', 'cilium-config');
      const v = Number(cm?.data?.['connectivity-probe-frequency-ratio'] ?? NaN);
      return Number.isFinite(v) && v >= 0 && v <= 1 ? v : DEFAULT_RATIO;
    } catch {
      return DEFAULT_RATIO;
    }
  };
  /** getResults + updateCluster: the known nodes with their results as they stand. */
  const refresh = () => {
    const nodes = known.map((p) => {
      const r = results.get(p.ip);
      return {
        name: p.name,
        host: {
          'primary-address': {
            ip: p.ip,
            ...(r && { http: { ...(r.latency !== undefined && { latency: r.latency }), ...(r.status && { status: r.status }), lastProbed: r.lastProbed } }),
          },
          'secondary-addresses': [],
        },
      };
    });
    report = { local: { name: ctx.node }, nodes, timestamp: rfc3339(roundStart), probeInterval: goDuration(intervalNs) };
  };
  /** setNodes: nodes that appeared are added without a result, gone ones dropped with theirs. */
  const updateNodes = async () => {
    const now = await peers(ctx).catch(() => undefined);
    if (!now) return;
    for (const p of known) if (!now.some((n) => n.ip === p.ip)) results.delete(p.ip);
    known = now;
  };
  /** setProbeInterval: from the nodes known now, before the round's ticker starts (RunLoop). */
  const setProbeInterval = async () => {
    intervalNs = probeIntervalNs(await ratio(), known.length * IPS_PER_NODE);
  };
  /** runProbe: one greeting per node, spread over the interval (the health endpoints' turns left out). */
  const round = async () => {
    roundStart = Date.now();
    const gapMs = intervalMs() / Math.max(1, known.length);
    const greetings: Promise<void>[] = [];
    for (const [i, p] of known.entries()) {
      if (stopped) return;
      if (i > 0) await after(gapMs);
      greetings.push(
        greet(p.ip).then((r) => {
          if (known.some((n) => n.ip === p.ip)) results.set(p.ip, { ...r, lastProbed: rfc3339(Date.now()) });
        }),
      );
    }
    await Promise.all(greetings);
  };
  void (async () => {
    await updateNodes();
    while (!stopped) {
      await setProbeInterval();
      const tick = after(intervalMs());
      const probing = round();
      await Promise.all([tick, probing]);
      if (stopped) return;
      await updateNodes();
      refresh();
    }
  })();
  const sideTicker = setInterval(() => {
    void updateNodes().then(refresh);
  }, REPORT_EVERY_MS * scale);

  mkdirSync(dirname(socketPath), { recursive: true });
  rmSync(socketPath, { force: true });
  const api = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if ((req.method === 'PUT' && path === '/v1beta/status/probe') || (req.method === 'GET' && path === '/v1beta/status')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(report));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found\n');
  });
  api.on('error', () => undefined);
  api.listen(socketPath);
  return {
    close: () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      clearInterval(sideTicker);
      responder.close();
      api.close();
    },
  };
}
