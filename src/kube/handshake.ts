// A TLS handshake from the engine to an address and port as seen from a host, carried over the run's SSH
// connection to that host (ssh direct-tcpip), verified against the cluster CA. It needs no route from the
// operator's machine to the node LAN (a bastion, NAT), and nothing on the host but sshd.
import { checkServerIdentity, connect, type PeerCertificate } from 'node:tls';
import type { Remote } from '../transport/types.ts';

export type Handshake = { ok: true } | { ok: false; certificate: boolean; seen: string };

/** Node's TLS error codes for a certificate that does not verify (another CA, a missing SAN, expired). */
export function isCertificateError(code: string | undefined): boolean {
  return /ALTNAME|CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code ?? '');
}

export async function handshakeVia(remote: Remote, address: string, port: number, ca: string, timeoutMs = 5_000): Promise<Handshake> {
  if (!remote.forward) return { ok: false, certificate: false, seen: `the connection to ${remote.host} cannot forward ports` };
  let stream: import('node:stream').Duplex;
  try {
    stream = await remote.forward(address, port);
  } catch (err) {
    return { ok: false, certificate: false, seen: `${address}:${port} through ${remote.host}: ${(err as Error).message}` };
  }
  return new Promise((resolve) => {
    let done = false;
    const finish = (h: Handshake) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      stream.destroy();
      resolve(h);
    };
    const socket = connect(
      {
        socket: stream,
        ca,
        // The serving certificate must name the address (an IP SAN); Node sends no SNI for an IP host.
        host: address,
        checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(address, cert),
      },
      () => finish({ ok: true }),
    );
    const timer = setTimeout(
      () => finish({ ok: false, certificate: false, seen: `${address}:${port} through ${remote.host}: no TLS handshake within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
    socket.once('error', (err: NodeJS.ErrnoException) =>
      finish({ ok: false, certificate: isCertificateError(err.code), seen: `${address}:${port} through ${remote.host}: ${err.message}` }),
    );
    stream.once('error', (err: Error) => finish({ ok: false, certificate: false, seen: `${address}:${port} through ${remote.host}: ${err.message}` }));
    stream.once('close', () =>
      finish({ ok: false, certificate: false, seen: `${address}:${port} through ${remote.host}: the connection closed before the TLS handshake` }),
    );
  });
}
