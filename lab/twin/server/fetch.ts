// HTTPS requests from a joining server or an agent to an existing server, with error texts shaped like
// Go's net/http ones (`Get "https://x:6443/cacerts": dial tcp x:6443: connect: connection refused`),
// because k3s's messages embed them.
import https from 'node:https';

export interface FetchOpts {
  ca?: string; // verify against this CA; without it the certificate is not verified (as k3s's first /cacerts request)
  auth?: { user: string; password: string };
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export class FetchError extends Error {
  /** The connection itself failed (refused, unreachable, timed out before it was made): a load balancer tries another server. */
  constructor(message: string, readonly dial = false) {
    super(message);
  }
}

/** Errors of a TCP connect that did not come about (what k3s's load balancer counts as a failed dial). */
export const DIAL_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EADDRNOTAVAIL']);

function goDialError(url: URL, code: string | undefined, message: string): string {
  const hostPort = `${url.hostname}:${url.port || 443}`;
  const why = code === 'ECONNREFUSED' ? 'connect: connection refused'
    : code === 'EHOSTUNREACH' ? 'connect: no route to host'
    : code === 'ENETUNREACH' ? 'connect: network is unreachable'
    : code === 'ETIMEDOUT' || code === 'TIMEOUT' ? 'i/o timeout'
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
    const req = https.request(url, {
      method,
      ...(o.ca ? { ca: o.ca, rejectUnauthorized: true } : { rejectUnauthorized: false }),
      headers: {
        ...(o.headers ?? {}),
        ...(o.auth ? { authorization: 'Basic ' + Buffer.from(`${o.auth.user}:${o.auth.password}`).toString('base64') } : {}),
        ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('socket', (sock) => (sock.connecting ? sock.once('connect', () => (connected = true)) : (connected = true)));
    req.setTimeout(o.timeoutMs ?? 10_000, () => {
      const e = new Error('timeout') as NodeJS.ErrnoException;
      e.code = 'TIMEOUT';
      req.destroy(e);
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const tls = x509Error(e, url);
      const detail = tls ? `tls: failed to verify certificate: ${tls}` : goDialError(url, e.code, e.message);
      reject(new FetchError(`${verb} "${urlStr}": ${detail}`, !connected && (DIAL_ERRORS.has(e.code ?? '') || e.code === 'TIMEOUT')));
    });
    req.end(data);
  });
}

export async function fetchJSON(urlStr: string, o: FetchOpts = {}): Promise<any> {
  const r = await fetchText(urlStr, o);
  if (r.status >= 300) throw new FetchError(`${urlStr}: ${r.status} ${r.text.trim()}`);
  return JSON.parse(r.text);
}
