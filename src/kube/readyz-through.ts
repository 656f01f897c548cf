// An API server's /readyz at an address, asked from a host without starting a process there: the host's sshd
// opens the TCP connection (ssh direct-tcpip over the run's connection to it, so the path is the host's own),
// and the engine speaks TLS through it, verified against the cluster CA, authenticated with the admin
// kubeconfig's client certificate, as `k3s kubectl --server https://<address>:<port> get --raw /readyz` on
// the host would.
import { request } from 'node:http';
import { checkServerIdentity, connect, type PeerCertificate, type TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Remote } from '../transport/types.ts';

/** The admin kubeconfig's cluster CA and client certificate and key, PEM. */
export interface ApiCredentials {
  ca: string;
  cert: string;
  key: string;
}

/**
 * `tls`: the API answered with a certificate of the cluster CA naming the address (whatever /readyz said);
 * `ok`: /readyz answered 200 `ok`. `seen`: what was seen, in words (the address and the host are the caller's to name).
 */
export interface Readyz {
  ok: boolean;
  tls: boolean;
  seen: string;
}

/** A body's last line, short: the apiserver's /readyz names its failed check in its last lines. */
const lastLineOf = (body: string) => body.trim().split('\n').at(-1)?.slice(0, 300) ?? '';

export async function readyzThrough(remote: Remote, address: string, port: number, creds: ApiCredentials, timeoutMs = 5_000): Promise<Readyz> {
  if (!remote.forward) return { ok: false, tls: false, seen: `the connection to ${remote.host} cannot forward ports` };
  let tls = false;
  let stream: Duplex | undefined;
  let socket: TLSSocket | undefined;
  let done = false;
  const answer = new Promise<Readyz>((resolve) => {
    const fail = (why: string) => resolve({ ok: false, tls, seen: why });
    remote.forward!(address, port).then(
      (s) => {
        // Opened after the answer was given up on: closed at once.
        if (done) return void s.destroy();
        stream = s;
        s.once('error', (err: Error) => fail(err.message));
        socket = connect({
          socket: s,
          ca: creds.ca,
          cert: creds.cert,
          key: creds.key,
          // The serving certificate must name the address (an IP SAN); Node sends no SNI for an IP host.
          host: address,
          checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(address, cert),
        });
        socket.once('secureConnect', () => (tls = true));
        const req = request(
          { createConnection: () => socket!, method: 'GET', path: '/readyz', headers: { host: `${address}:${port}`, connection: 'close' } },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              if (body.length < 64 * 1024) body += d;
            });
            res.once('end', () =>
              res.statusCode === 200 && body.trim() === 'ok'
                ? resolve({ ok: true, tls, seen: 'ok' })
                : fail(`HTTP ${res.statusCode}${body.trim() ? `: ${lastLineOf(body)}` : ''}`),
            );
            res.once('error', (err: Error) => fail(err.message));
          },
        );
        req.once('error', (err: Error) => fail(err.message));
        req.end();
      },
      (err: unknown) => fail((err as Error).message),
    );
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Readyz>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, tls, seen: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
  });
  try {
    return await Promise.race([answer, late]);
  } finally {
    done = true;
    clearTimeout(timer);
    socket?.destroy();
    stream?.destroy();
  }
}
