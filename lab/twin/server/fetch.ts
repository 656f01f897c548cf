// HTTPS requests from a joining server or an agent to an existing server, with error texts shaped like
// Go's net/http ones (`Get "https://x:6443/cacerts": dial tcp x:6443: connect: connection refused`),
// because k3s's messages embed them.
import https from 'node:https';

export interface FetchOpts {
  ca?: string; // verify against this CA; without it the certificate is not verified (k3s's insecure /cacerts request)
  /** Verify against the host's own CA bundle (Go's default client: k3s's first /cacerts request). */
  systemCAs?: boolean;
  auth?: { user: string; password: string };
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

class FetchError extends Error {
  /** The connection itself failed (refused, unreachable, timed out before it was made): a load balancer tries another server. */
  constructor(
    message: string,
    readonly dial = false,
  ) {
    super(message);
  }
}

/** Errors of a TCP connect that did not come about (what k3s's load balancer counts as a failed dial). */
export const DIAL_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EADDRNOTAVAIL']);

function goDialError(url: URL, code: string | undefined, message: string): string {
  const hostPort = `${url.hostname}:${url.port || 443}`;
  const why =
    code === 'ECONNREFUSED'
      ? 'connect: connection refused'
      : code === 'EHOSTUNREACH'
        ? 'connect: no route to host'
        : code === 'ENETUNREACH'
          ? 'connect: network is unreachable'
          : code === 'ETIMEDOUT'
            ? 'i/o timeout'
            : message;
  return `dial tcp ${hostPort}: ${why}`;
}

/** Node's certificate errors in the words of Go's crypto/x509, which k3s's messages carry. */
export function x509Error(e: NodeJS.ErrnoException & { reason?: string }, url: URL): string | undefined {
  switch (e.code) {
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return 'x509: certificate has expired or is not yet valid';
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return 'x509: certificate signed by unknown authority';
    case 'ERR_TLS_CERT_ALTNAME_INVALID': {
      const names = [...String(e.reason ?? e.message).matchAll(/(?:IP Address|DNS):([^,\s]+)/g)].map((m) => m[1]);
      return `x509: certificate is valid for ${names.join(', ')}, not ${url.hostname}`;
    }
    default:
      return e.code?.startsWith('ERR_TLS') || e.code?.includes('CERT') ? e.message : undefined;
  }
}

export function fetchText(urlStr: string, o: FetchOpts = {}): Promise<{ status: number; text: string }> {
  const url = new URL(urlStr);
  const method = o.method ?? (o.body === undefined ? 'GET' : 'POST');
  const verb = method[0] + method.slice(1).toLowerCase();
  const data = o.body === undefined ? undefined : JSON.stringify(o.body);
  return new Promise((resolve, reject) => {
    let connected = false;
    const req = https.request(
      url,
      {
        method,
        // A connection of its own, as k3s's clients (GetHTTPClient: DisableKeepAlives): Node's global agent
        // would also put its own 5 s idle timeout on the socket.
        agent: false,
        ...(o.ca ? { ca: o.ca, rejectUnauthorized: true } : { rejectUnauthorized: o.systemCAs === true }),
        headers: {
          ...(o.headers ?? {}),
          ...(o.auth ? { authorization: 'Basic ' + Buffer.from(`${o.auth.user}:${o.auth.password}`).toString('base64') } : {}),
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    // Whether the connection was made: a failure before it is a dial failure (the agent's load balancer
    // then tries its next server).
    req.on('socket', (sock) => (sock.connecting ? sock.once('connect', () => (connected = true)) : (connected = true)));
    // k3s's clients have `Timeout: defaultClientTimeout` (10 s, pkg/clientaccess/token.go), a limit on the
    // whole request: when it runs out, however far the request got (a dial whose SYNs are dropped
    // included), Go's net/http says `context deadline exceeded (Client.Timeout exceeded while awaiting
    // headers)` (src/net/http/client.go). Not a socket idle timeout: it counts from the request's start.
    const timer = setTimeout(() => {
      const e = new Error('timeout') as NodeJS.ErrnoException;
      e.code = 'CLIENT_TIMEOUT';
      req.destroy(e);
    }, o.timeoutMs ?? CLIENT_TIMEOUT_MS);
    req.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const tls = x509Error(e, url);
      const detail =
        e.code === 'CLIENT_TIMEOUT' ? CLIENT_TIMEOUT_TEXT : tls ? `tls: failed to verify certificate: ${tls}` : goDialError(url, e.code, e.message);
      reject(new FetchError(`${verb} "${urlStr}": ${detail}`, !connected && (DIAL_ERRORS.has(e.code ?? '') || e.code === 'CLIENT_TIMEOUT')));
    });
    req.end(data);
  });
}

/** k3s's clientaccess timeout (pkg/clientaccess/token.go defaultClientTimeout) and Go's words when it runs out. */
const CLIENT_TIMEOUT_MS = 10_000;
export const CLIENT_TIMEOUT_TEXT = 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';

/**
 * The error of a refused request, as k3s-io/k3s pkg/clientaccess/token.go readBody makes it: a JSON
 * metav1.Status body becomes its message (a StatusError), anything else `<url>: <status>`.
 */
export function refusal(urlStr: string, status: number, text: string): string {
  try {
    const body = JSON.parse(text);
    if (body?.kind === 'Status' && typeof body.message === 'string') return body.message;
  } catch {
    /* not JSON */
  }
  return `${urlStr}: ${status} ${text.trim()}`;
}

export async function fetchJSON(urlStr: string, o: FetchOpts = {}): Promise<any> {
  const r = await fetchText(urlStr, o);
  if (r.status >= 300) throw new FetchError(refusal(urlStr, r.status, r.text));
  return JSON.parse(r.text);
}

/**
 * k3s-io/k3s pkg/clientaccess/token.go getCACerts: a first request with the host's CA bundle ("expected to
 * fail": a cluster CA is in no public bundle; its error is ignored, its wait is not), then the bundle
 * downloaded without verifying (`failed to get CA certs: …`), then downloaded again verified with it
 * (`CA cert validation failed: …`). Each request has the client's 10 s timeout, so a server whose packets
 * are dropped fails after 20 s.
 */
export async function getCACerts(server: string): Promise<string> {
  const url = `${server}/cacerts`;
  await fetchText(url, { systemCAs: true }).catch(() => undefined);
  let cacerts: string;
  try {
    const r = await fetchText(url);
    if (r.status < 200 || r.status > 299) throw new FetchError(refusal(url, r.status, r.text));
    cacerts = r.text;
  } catch (e) {
    throw new FetchError(`failed to get CA certs: ${(e as Error).message}`);
  }
  try {
    await fetchText(url, { ca: cacerts });
  } catch (e) {
    throw new FetchError(`CA cert validation failed: ${(e as Error).message}`);
  }
  return cacerts;
}
