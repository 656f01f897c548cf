// The operator's view of the API during a rolling change: GET /readyz through the VIP every 200 ms, and each
// server's own /readyz every second (how many servers are down at once: a rolling change keeps a majority
// running, so etcd keeps quorum), from this machine with the admin kubeconfig's CA and client certificate.
// No process per probe: plain HTTPS.
//
// Each probe's outcome is kept in words (ok, refused, the status and body, a timeout) so that a long gap or
// a sample with servers down says what was seen when it fails: a server being restarted refuses at once; a
// server without quorum answers 500 once its etcd read gives up (2 s in the lab's twin,
// lab/twin/api/handler.ts), and so does one whose etcd read is slow on a loaded machine (seen in CI during the
// backup before any server was touched): a 500 counts against serving, not as down; a slow ok is served.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { parse } from 'yaml';

interface Creds {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function credsOf(kubeconfig: string): Creds {
  const doc = parse(readFileSync(kubeconfig, 'utf8'));
  const b64 = (s: string) => Buffer.from(s, 'base64');
  return {
    ca: b64(doc.clusters[0].cluster['certificate-authority-data']),
    cert: b64(doc.users[0].user['client-certificate-data']),
    key: b64(doc.users[0].user['client-key-data']),
  };
}

interface Outcome {
  ok: boolean;
  /** Nothing took the connection: refused or reset (no API server running there), or the host unreachable. */
  down?: boolean;
  /** ok, a status and the body's first line, an error code, or timeout; with how long it took. */
  how: string;
  /** When the server's kernel accepted the TCP connection (epoch ms); undefined when it never did. */
  acceptedAt?: number;
}

/** Errors that say no API server is there: what a server being restarted (or stopped) gives. */
const DOWN = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH']);

function readyz(address: string, creds: Creds, timeoutMs: number): Promise<Outcome> {
  const t0 = Date.now();
  const took = () => `${Date.now() - t0} ms`;
  let acceptedAt: number | undefined;
  return new Promise((resolve) => {
    // No servername: the address is an IP, which SNI cannot carry (Node warns DEP0123); the certificate is
    // still checked against it (an IP SAN). A new connection per probe (no agent): a kept-alive one would
    // stay with one server and say nothing of where the VIP is now.
    const req = request({ host: address, port: 6443, path: '/readyz', method: 'GET', ...creds, timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        const ok = res.statusCode === 200 && body.trim() === 'ok';
        resolve({ ok, acceptedAt, how: ok ? `ok in ${took()}` : `${res.statusCode} ${body.trim().split('\n')[0]} in ${took()}` });
      });
    });
    req.on('socket', (socket) => socket.once('connect', () => (acceptedAt = Date.now())));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e: NodeJS.ErrnoException) =>
      resolve({ ok: false, acceptedAt, down: DOWN.has(e.code ?? ''), how: `${e.code ?? e.message} after ${took()}` }),
    );
    req.end();
  });
}

export interface ApiWatch {
  /** Ends the probing; what was seen. */
  stop(): Promise<ApiWatchResult>;
}

interface ApiWatchResult {
  probes: number;
  failed: number;
  /** The longest time without a successful probe through the VIP, in ms. */
  longestGapMs: number;
  /** Where the longest gap was (seconds from the start of the watch) and the failed probes in it. */
  longestGapSeen: string;
  /** Seconds sampled, and the fewest servers that served in any one of them. */
  samples: number;
  fewestServing: number;
  /** The first sample with the fewest: when, and each server's answer. */
  fewestSeen: string;
  /**
   * The most servers down at once (refusing the connection: k3s not running there): what a rolling change must
   * keep at one of three. A slow answer, or a 500 of an etcd read that gave up on a loaded machine, is not down.
   */
  mostDown: number;
  mostDownSeen: string;
  /** The longest this process's own timers fired late (a stall of the measuring machine), in ms. */
  watcherLateMs: number;
}

/** A server's /readyz gets this long: more than the twin's 2-s etcd read, so a server without quorum answers 500 first. */
const SERVER_TIMEOUT_MS = 3_000;
/** A probe through the VIP gets as long (a probe is started every 200 ms whether or not the last has ended). */
const VIP_TIMEOUT_MS = 3_000;

interface VipProbe extends Outcome {
  startedAt: number;
}

/**
 * The longest time between two probes through the VIP that answered ok, measured from when the server's kernel
 * accepted each one's connection (a loaded machine answers late, but takes the connection when it comes;
 * a VIP nobody holds takes none, a stopped API server refuses it, one without quorum answers 500), counted
 * only where a probe started in between failed: an interval in which nothing failed is no evidence of an
 * outage (it is the watcher's own stall, reported apart). Before the first ok, from the watch's start.
 */
export function longestGap(all: VipProbe[], start: number, end: number, at: (t: number) => string): { ms: number; seen: string } {
  const oks = all
    .filter((p) => p.ok)
    .map((p) => p.acceptedAt ?? p.startedAt)
    .sort((a, b) => a - b);
  const edges = [start, ...oks, end];
  let best = { ms: 0, seen: 'none' };
  for (let i = 1; i < edges.length; i++) {
    const [from, to] = [edges[i - 1], edges[i]];
    const failed = all.filter((p) => !p.ok && p.startedAt >= from && p.startedAt < to);
    if (!failed.length || to - from <= best.ms) continue;
    const list = failed.slice(0, 8).map((p) => `${at(p.startedAt)} ${p.how}`);
    best = { ms: to - from, seen: `from ${at(from)} to ${at(to)}; failed: ${list.join('; ')}${failed.length > 8 ? ` and ${failed.length - 8} more` : ''}` };
  }
  return best;
}

export function watchApi(kubeconfig: string, vip: string, servers: string[]): ApiWatch {
  const creds = credsOf(kubeconfig);
  const start = Date.now();
  const at = (t: number) => `${((t - start) / 1000).toFixed(1)} s`;
  let running = true;
  const vipProbes: VipProbe[] = [];
  let samples = 0;
  let fewestServing = servers.length;
  let fewestSeen = 'every sample had every server serving';
  let mostDown = 0;
  let mostDownSeen = 'no server was down in any sample';
  let watcherLateMs = 0;
  const sleep = async (ms: number) => {
    const due = Date.now() + ms;
    await new Promise((r) => setTimeout(r, ms));
    watcherLateMs = Math.max(watcherLateMs, Date.now() - due);
  };
  const vipLoop = (async () => {
    const inFlight = new Set<Promise<void>>();
    while (running) {
      const t = Date.now();
      const probe: Promise<void> = readyz(vip, creds, VIP_TIMEOUT_MS).then((seen) => {
        vipProbes.push({ ...seen, startedAt: t });
        inFlight.delete(probe);
      });
      inFlight.add(probe);
      await sleep(Math.max(0, 200 - (Date.now() - t)));
    }
    await Promise.all(inFlight);
  })();
  const quorumLoop = (async () => {
    while (running) {
      const t = Date.now();
      const seen = await Promise.all(servers.map((s) => readyz(s, creds, SERVER_TIMEOUT_MS)));
      const serving = seen.filter((s) => s.ok).length;
      samples++;
      const answers = `at ${at(t)}: ${servers.map((s, i) => `${s} ${seen[i].how}`).join(', ')}`;
      if (serving < fewestServing) [fewestServing, fewestSeen] = [serving, answers];
      const down = seen.filter((s) => s.down).length;
      if (down > mostDown) [mostDown, mostDownSeen] = [down, answers];
      await sleep(Math.max(0, 1_000 - (Date.now() - t)));
    }
  })();
  return {
    async stop() {
      running = false;
      const end = Date.now();
      await Promise.all([vipLoop, quorumLoop]);
      const gap = longestGap(vipProbes, start, end, at);
      const failed = vipProbes.filter((p) => !p.ok).length;
      return {
        probes: vipProbes.length,
        failed,
        longestGapMs: gap.ms,
        longestGapSeen: gap.seen,
        samples,
        fewestServing,
        fewestSeen,
        mostDown,
        mostDownSeen,
        watcherLateMs,
      };
    },
  };
}
