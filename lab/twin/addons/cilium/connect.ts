// How Cilium's k8s client waits for the API server, in the config init container (`cilium-dbg
// build-config`) and in the agent alike: cilium/cilium pkg/k8s/client/cell.go waitForConn — `Establishing
// connection to apiserver` before every try, GET /api/v1/namespaces/kube-system, tries 5 s apart
// (wait.Until), given up once a one-minute timer has fired, then one `Unable to contact k8s api-server`
// with the last error. A dial waits up to the client's connection timeout (K8sClientConnectionTimeout,
// 30 s), so against a black hole each try takes 30 s and the error comes after about 65 s; against a
// refusing or unrouted address after about 60 s.
import { join } from 'node:path';
import type { NodeContext } from '../context.ts';
import { slogLine } from '../logfmt.ts';
import { reachApi } from '../reach.ts';

const CONNECT_RETRY_MS = 5_000;
const CONNECT_GIVE_UP_MS = 60_000;
const DIAL_TIMEOUT_MS = 30_000;

export interface Connect {
  ok: boolean;
  url: string;
  /** client-go's error for the last try: Get "<url>/api/v1/namespaces/kube-system": <dial or TLS error>. */
  error?: string;
  tookMs: number;
}

export async function waitForConn(
  ctx: NodeContext,
  host: string,
  port: string,
  log: (msg: string, url: string) => void,
  sleep: (ms: number) => Promise<void>,
  stopped: () => boolean,
): Promise<Connect> {
  const url = `https://${host}:${port}`;
  const t0 = Date.now();
  for (;;) {
    log('Establishing connection to apiserver', url);
    const r = await reachApi(host, Number(port), {
      caFile: ctx.caFile ?? join(ctx.dataDir, 'server', 'tls', 'server-ca.crt'),
      serviceCidr: ctx.serviceCidr,
      timeoutMs: DIAL_TIMEOUT_MS,
    });
    if (stopped()) return { ok: false, url, error: 'stopped', tookMs: Date.now() - t0 };
    if (r.ok) return { ok: true, url, tookMs: Date.now() - t0 };
    if (Date.now() - t0 >= CONNECT_GIVE_UP_MS)
      return { ok: false, url, error: `Get "${url}/api/v1/namespaces/kube-system": ${r.error}`, tookMs: Date.now() - t0 };
    await sleep(CONNECT_RETRY_MS);
  }
}

/** Go's time.Duration.String() for a whole number of milliseconds: 10s, 1m20s, 1m0.034s, 5m0s. */
export function goDuration(ms: number): string {
  const m = Math.floor(ms / 60_000);
  const rest = (ms % 60_000) / 1000;
  const s = Number.isInteger(rest) ? String(rest) : String(Number(rest.toFixed(3)));
  return m ? `${m}m${s}s` : `${s}s`;
}

/** A Cilium log line: Go slog text with the level in lower case, as Cilium's handler writes it (`level=info`). */
export function ciliumLine(level: 'INFO' | 'WARN' | 'ERROR', msg: string, attrs: Record<string, string> = {}): string {
  return slogLine(level, msg, attrs).replace(/ level=[A-Z]+ /, ` level=${level.toLowerCase()} `);
}
