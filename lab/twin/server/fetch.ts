// HTTPS requests from a joining server or an agent to an existing server, with error texts shaped like
// Go's net/http ones (`Get "https://x:6443/cacerts": dial tcp x:6443: connect: connection refused`),
// because k3s's messages embed them.
import https from 'node:https';

export interface FetchOpts {
  ca?: string; // verify against this CA; without it the certificate is not verified (as k3s's first /cacerts request)
  auth?: { user: string; password: string };
  method?: string;
  body?: unknown;
  timeoutMs?: number;
}

export class FetchError extends Error {}

function goDialError(url: URL, code: string | undefined, message: string): string {
  const hostPort = `${url.hostname}:${url.port || 443}`;
  const why = code === 'ECONNREFUSED' ? 'connect: connection refused'
    : code === 'EHOSTUNREACH' ? 'connect: no route to host'
    : code === 'ENETUNREACH' ? 'connect: network is unreachable'
    : code === 'ETIMEDOUT' || code === 'TIMEOUT' ? 'i/o timeout'
    : message;
  return `dial tcp ${hostPort}: ${why}`;
}

export function fetchText(urlStr: string, o: FetchOpts = {}): Promise<{ status: number; text: string }> {
  const url = new URL(urlStr);
  const method = o.method ?? (o.body === undefined ? 'GET' : 'POST');
  const verb = method[0] + method.slice(1).toLowerCase();
  const data = o.body === undefined ? undefined : JSON.stringify(o.body);
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method,
      ...(o.ca ? { ca: o.ca, rejectUnauthorized: true } : { rejectUnauthorized: false }),
      headers: {
        ...(o.auth ? { authorization: 'Basic ' + Buffer.from(`${o.auth.user}:${o.auth.password}`).toString('base64') } : {}),
        ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.setTimeout(o.timeoutMs ?? 10_000, () => {
      const e = new Error('timeout') as NodeJS.ErrnoException;
      e.code = 'TIMEOUT';
      req.destroy(e);
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const tlsCode = e.code?.startsWith('ERR_TLS') || e.code?.includes('CERT') || e.code?.includes('SELF_SIGNED');
      const detail = tlsCode ? `tls: failed to verify certificate: ${e.message}` : goDialError(url, e.code, e.message);
      reject(new FetchError(`${verb} "${urlStr}": ${detail}`));
    });
    req.end(data);
  });
}

export async function fetchJSON(urlStr: string, o: FetchOpts = {}): Promise<any> {
  const r = await fetchText(urlStr, o);
  if (r.status >= 300) throw new FetchError(`${urlStr}: ${r.status} ${r.text.trim()}`);
  return JSON.parse(r.text);
}
