// HTTP downloads: the one module that talks to a web server (upstream releases, or a mirror). Plain
// node:http/https, so redirects, Range requests and an idle timeout are ours to bound and test; callers
// take an `Http` and tests pass one that dials a local server. No proxy support (HTTPS_PROXY is not read).
import { get as httpGet, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { Readable } from 'node:stream';

interface HttpResponse {
  status: number;
  /** The URL that answered, after redirects. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Readable;
}

export interface Http {
  /** One GET, following redirects (at most `maxRedirects`). Rejects with HttpFailure. */
  get(url: string, opts: { headers?: Record<string, string>; signal?: AbortSignal }): Promise<HttpResponse>;
}

/** Why a request got no usable answer; `detail` is one line for the operator. */
export class HttpFailure extends Error {
  constructor(
    readonly url: string,
    readonly detail: string,
  ) {
    super(`${url}: ${detail}`);
    this.name = 'HttpFailure';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface HttpOptions {
  /** No byte for this long (connecting, waiting for headers, or in the body) ends the request. */
  idleMs: number;
  maxRedirects: number;
}

export function nodeHttp(opts: HttpOptions = { idleMs: 30_000, maxRedirects: 5 }): Http {
  return {
    async get(url, { headers = {}, signal }) {
      let current = url;
      for (let hop = 0; ; hop++) {
        const res = await once(current, headers, opts.idleMs, signal);
        const location = res.headers.location;
        if (!REDIRECTS.has(res.statusCode ?? 0) || !location) return { status: res.statusCode ?? 0, url: current, headers: res.headers, body: res };
        res.resume(); // a redirect's body is not read: drain it so the socket is freed
        if (hop >= opts.maxRedirects) throw new HttpFailure(url, `more than ${opts.maxRedirects} redirects (the last to ${location})`);
        const next = new URL(location, current);
        // GitHub's release assets redirect to their storage over https; a step down to http is refused.
        if (new URL(current).protocol === 'https:' && next.protocol !== 'https:') throw new HttpFailure(url, `redirected from https to ${next.href}: refused`);
        current = next.href;
      }
    },
  };
}

function once(url: string, headers: Record<string, string>, idleMs: number, signal?: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return reject(new HttpFailure(url, 'not a URL'));
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return reject(new HttpFailure(url, `${parsed.protocol} is not http or https`));
    const get = parsed.protocol === 'https:' ? httpsGet : httpGet;
    const req = get(parsed, { headers: { 'user-agent': 'bootstrap-artifacts', ...headers }, signal });
    // The socket's idle timer covers the connection, the wait for headers and every gap in the body;
    // the body is ended with the reason too (else its reader sees only "aborted").
    let response: IncomingMessage | undefined;
    req.setTimeout(idleMs, () => {
      const err = new Error(`no data for ${idleMs >= 1000 ? `${Math.round(idleMs / 1000)} s` : `${idleMs} ms`}`);
      response?.destroy(err);
      req.destroy(err);
    });
    req.on('response', (res) => resolve((response = res)));
    req.on('error', (err: NodeJS.ErrnoException) => reject(new HttpFailure(url, describe(err))));
  });
}

/** A network error in words: "connection refused", "name not resolved", … with Node's code. */
function describe(err: NodeJS.ErrnoException): string {
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ENOTFOUND: 'the host name does not resolve (no DNS or no network?)',
    EAI_AGAIN: 'the host name does not resolve (no DNS or no network?)',
    ENETUNREACH: 'the network is unreachable',
    EHOSTUNREACH: 'the host is unreachable',
    ECONNRESET: 'the connection was reset',
    ABORT_ERR: 'interrupted',
  };
  const said = err.code ? words[err.code] : undefined;
  return said ? `${said} (${err.code})` : err.message;
}
