// cilium-health as the agent runs it, reduced to the node-to-node path the engine reads: a responder on
// the node's address, port 4240 (the chart's health port for cluster health checks; cilium/cilium
// Documentation/operations/system_requirements.rst: "4240/tcp cluster health checks (cilium-health)"),
// answering GET /hello; a prober that greets every node's responder (pkg/health/server/prober.go httpProbe:
// GET http://<node ip>:4240/hello, status "" and the latency on success, the client's error text on
// failure); and the health API on /var/run/cilium/health.sock, which `cilium-health status [--probe] -o json`
// reads: GET /v1beta/status (the last results) and PUT /v1beta/status/probe (probe now), both a
// HealthStatusResponse (api/v1/health/models: health_status_response.go `local`, `nodes`, `timestamp`;
// node_status.go `name`, `host`; host_status.go `primary-address`; path_status.go `ip`, `http`;
// connectivity_status.go `latency` in ns, `status`). Reachability is real: a TCP connection and an HTTP
// request to the peer's 4240, so a firewall between two lab hosts shows as it would.
// Not imitated: ICMP probes (`icmp`), the simulated health endpoint in the pod network (`health-endpoint`,
// which would go through the VXLAN tunnel), the periodic probe interval (results are refreshed on every
// GET, at most every PROBE_CACHE_MS).
import { mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { dirname } from 'node:path';
import { BUILTIN } from '../../api/resources.ts';
import type { NodeContext } from '../context.ts';

const HEALTH_PORT = 4240;
export const HEALTH_SOCKET = '/var/run/cilium/health.sock';
const NODES = BUILTIN.find((x) => x.resource === 'nodes')!;
const PROBE_TIMEOUT_MS = 3_000;
const PROBE_CACHE_MS = 5_000;

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

export function serveHealth(ctx: NodeContext, socketPath: string): { close(): void } {
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

  let last: { at: number; body: any } | undefined;
  const probe = async () => {
    const list = await peers(ctx).catch(() => [] as Peer[]);
    const nodes = await Promise.all(
      list.map(async (p) => {
        const r = await greet(p.ip);
        return {
          name: p.name,
          host: {
            'primary-address': { ip: p.ip, http: { ...(r.latency !== undefined ? { latency: r.latency } : {}), ...(r.status ? { status: r.status } : {}) } },
            'secondary-addresses': [],
          },
        };
      }),
    );
    last = { at: Date.now(), body: { local: { name: ctx.node }, nodes, timestamp: new Date().toISOString() } };
    return last.body;
  };
  mkdirSync(dirname(socketPath), { recursive: true });
  rmSync(socketPath, { force: true });
  const api = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const answer = (body: any) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'PUT' && path === '/v1beta/status/probe') return void probe().then(answer);
    if (req.method === 'GET' && path === '/v1beta/status')
      return void (last && Date.now() - last.at < PROBE_CACHE_MS ? Promise.resolve(last.body) : probe()).then(answer);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found\n');
  });
  api.on('error', () => undefined);
  api.listen(socketPath);
  return {
    close: () => {
      responder.close();
      api.close();
    },
  };
}
