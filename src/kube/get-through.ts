// A GET of the Kubernetes API at an address, asked from a host without starting a process there: the host's
// sshd opens the TCP connection (ssh direct-tcpip over the run's connection to it, so the path is the host's
// own), and the engine speaks TLS through it, verified against the cluster CA, authenticated with the admin
// kubeconfig's client certificate, as `k3s kubectl --server https://<address>:<port> get --raw <path>` on the
// host would. readyzThrough asks /readyz; apiRead (src/kube/api-read.ts) reads objects, apiDelete and apiPatch
// write them (a method and a body).
import { Agent, request, type ClientRequest } from 'node:http';
import { checkServerIdentity, connect, createSecureContext, type PeerCertificate, type SecureContext, type TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Remote } from '../transport/types.ts';
import { CauseError } from '../errors.ts';
import { isCertificateError } from './handshake.ts';

/** The admin kubeconfig's cluster CA and its user's client certificate and key (PEM), or its bearer token. */
export interface ApiCredentials {
  ca: string;
  cert?: string;
  key?: string;
  token?: string;
}

/**
 * `tls`: the API answered with a certificate of the cluster CA naming the address; `status` and `body`: its
 * answer, when one came; `seen`: why none came, in words (the address and the host are the caller's to name);
 * `certificate`: that was the server's certificate not verifying (another CA, the address not among its
 * SANs, expired), told by Node's TLS error code; `forward`: the SSH connection would not forward the
 * connection (SSH_FORWARD_FAILED, as the transport named it).
 */
export type Got = { tls: boolean } & ({ status: number; body: string } | { status?: undefined; seen: string; certificate: boolean; forward?: CauseError });

/** `ok`: /readyz answered 200 `ok`. `seen`: what was seen, in words. */
export interface Readyz {
  ok: boolean;
  tls: boolean;
  seen: string;
}

/** A body's last line, short: the apiserver's /readyz names its failed check in its last lines. */
const lastLineOf = (body: string) => body.trim().split('\n').at(-1)?.slice(0, 300) ?? '';

export async function readyzThrough(remote: Remote, address: string, port: number, creds: ApiCredentials, timeoutMs = 5_000): Promise<Readyz> {
  const got = await getThrough(remote, address, port, '/readyz', creds, timeoutMs);
  if (got.status === undefined) return { ok: false, tls: got.tls, seen: got.seen };
  if (got.status === 200 && got.body.trim() === 'ok') return { ok: true, tls: got.tls, seen: 'ok' };
  return { ok: false, tls: got.tls, seen: `HTTP ${got.status}${got.body.trim() ? `: ${lastLineOf(got.body)}` : ''}` };
}

/**
 * The TLS context of each set of credentials, built once: parsing the CA, the certificate and the key cost
 * about 6 ms of the engine's CPU per GET, and a run asks a few dozen with the same kubeconfig. Bounded: a run
 * meets one or two kubeconfigs (another after a rebuild rewrites it).
 */
const contexts = new Map<string, SecureContext>();
function contextOf(creds: ApiCredentials): SecureContext {
  const key = `${creds.ca}\0${creds.cert ?? ''}\0${creds.key ?? ''}`;
  let ctx = contexts.get(key);
  if (!ctx) {
    if (contexts.size >= 4) contexts.clear();
    ctx = createSecureContext({ ca: creds.ca, cert: creds.cert, key: creds.key });
    contexts.set(key, ctx);
  }
  return ctx;
}

/** Where k3s's API listens on every server, as the server's own GETs ask it (the tunnel's target too: tunnel.ts). */
export const OWN_API = { address: '127.0.0.1', port: 6443 } as const;

/** Answers larger than this are cut (a list of every Pod of a big cluster is a few MB). */
const MAX_BODY = 64 * 1024 * 1024;

/**
 * The connections to a server's own API through its SSH connection, kept open between GETs (HTTP keep-alive, as
 * kubectl's client keeps its connections): a run asks a server's API a few dozen times, and each new one cost a
 * forwarded channel and a TLS handshake with a client certificate on both ends. Per run: the pools are the run's
 * connections' (a WeakMap on the Remote); a pooled connection ends with its SSH connection, and an idle one does
 * not keep the process alive (Node unrefs a free socket).
 */
interface Pool {
  agent: Agent;
  /** The TLS sockets whose handshake completed: the server's certificate verified against the cluster CA. */
  verified: WeakSet<TLSSocket>;
}
const pools = new WeakMap<Remote, Map<string, Pool>>();

function poolOf(remote: Remote, address: string, port: number, creds: ApiCredentials): Pool {
  let byKey = pools.get(remote);
  if (!byKey) pools.set(remote, (byKey = new Map()));
  const key = `${address}:${port}\0${creds.ca}\0${creds.cert ?? ''}\0${creds.key ?? ''}`;
  let pool = byKey.get(key);
  if (!pool) {
    const verified = new WeakSet<TLSSocket>();
    // Kept only at the host's own API (OWN_API.address): a GET at the VIP or at another server's address asks whether
    // that address answers now, so it opens its own connection each time.
    // (Unbounded and not kept, Node's agent sends `Connection: close` and reuses nothing.)
    const own = address === OWN_API.address;
    const agent = new Agent({ keepAlive: own, maxSockets: own ? 8 : Infinity, maxFreeSockets: 4 });
    // The connection is opened by the host's sshd (direct-tcpip), then TLS through it: asynchronous, so the
    // callback form of createConnection (the agent waits for it).
    agent.createConnection = ((_: unknown, done: (err: Error | null, socket?: Duplex) => void) => {
      let secureContext: SecureContext;
      try {
        secureContext = contextOf(creds);
      } catch (err) {
        // A kubeconfig whose certificate or key does not parse: an answer in words, not an unhandled rejection.
        return void done(new Error(`the kubeconfig's credentials do not load: ${(err as Error).message}`));
      }
      remote.forward!(address, port).then(
        (stream) => {
          const socket = connect({
            socket: stream,
            secureContext,
            // The serving certificate must name the address (an IP SAN); Node sends no SNI for an IP host.
            host: address,
            checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(address, cert),
          });
          socket.once('secureConnect', () => verified.add(socket));
          stream.once('error', (err: Error) => socket.destroy(err));
          socket.once('close', () => stream.destroy());
          done(null, socket);
        },
        (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
      );
      return undefined;
    }) as unknown as Agent['createConnection'];
    byKey.set(key, (pool = { agent, verified }));
  }
  return pool;
}

/** A request that failed on a kept connection the server had closed meanwhile: asked again on a new one. */
const STALE = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED']);

export async function getThrough(
  remote: Remote,
  address: string,
  port: number,
  path: string,
  creds: ApiCredentials,
  timeoutMs = 5_000,
  o: { accept?: string; method?: 'GET' | 'DELETE' | 'PATCH'; body?: { type: string; text: string } } = {},
): Promise<Got> {
  if (!remote.forward) return { tls: false, seen: `the connection to ${remote.host} cannot forward ports`, certificate: false };
  const pool = poolOf(remote, address, port, creds);
  let tls = false;
  let current: ClientRequest | undefined;
  /** The answer was given (or given up on): a request failing after it is not asked again. */
  let over = false;
  const ask = (again: boolean) =>
    new Promise<Got>((resolve) => {
      // Each attempt's own connection says whether TLS completed.
      tls = false;
      const fail = (why: string, certificate = false) => resolve({ tls, seen: why, certificate });
      const req = request(
        {
          agent: pool.agent,
          method: o.method ?? 'GET',
          path,
          headers: {
            host: `${address}:${port}`,
            ...(o.accept && { accept: o.accept }),
            ...(o.body && { 'content-type': o.body.type, 'content-length': Buffer.byteLength(o.body.text) }),
            ...(creds.token && { authorization: `Bearer ${creds.token}` }),
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            if (body.length < MAX_BODY) body += d;
          });
          res.once('end', () => resolve({ tls, status: res.statusCode ?? 0, body }));
          res.on('error', (err: Error) => fail(err.message));
        },
      );
      current = req;
      req.once('socket', (socket: TLSSocket) => {
        if (pool.verified.has(socket)) tls = true;
        else socket.once('secureConnect', () => (tls = true));
      });
      // The TLS socket's errors come here too: a certificate that does not verify has Node's code. Every one, not
      // only the first: a request destroyed when its answer was given up on can still see its socket fail (a write
      // ECANCELED as the SSH channel closes), and an 'error' nobody listens to ends the process. Only the first counts.
      let failed = false;
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (failed) return;
        failed = true;
        if (!again && !over && req.reusedSocket && STALE.has(err.code ?? '')) return void ask(true).then(resolve);
        // The transport names a forward it could not open (SSH_FORWARD_FAILED): its evidence says what sshd said.
        if (err instanceof CauseError) return resolve({ tls, seen: err.evidence.seen ?? err.message, certificate: false, forward: err });
        fail(err.message, isCertificateError(err.code));
      });
      req.end(o.body?.text);
    });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Got>((resolve) => {
    timer = setTimeout(() => resolve({ tls, seen: `no answer within ${timeoutMs / 1000} s`, certificate: false }), timeoutMs);
  });
  const answer = ask(false);
  try {
    const got = await Promise.race([answer, late]);
    over = true;
    // Given up on: its connection goes with it (a server that accepts and never answers is not asked again on it).
    if (got.status === undefined) current?.destroy();
    return got;
  } finally {
    clearTimeout(timer);
  }
}
