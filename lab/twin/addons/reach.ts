// Can a pod reach the API server at host:port? A real TLS handshake verified against the cluster's server
// CA, with errors in Go's net/crypto words (what client-go wraps). A ClusterIP of the service CIDR is NOT
// dialled: on these clusters only kube-proxy or the CNI could route it and there is neither (k3s with
// disable-kube-proxy, before Cilium), so the twin waits the dial timeout and reports Go's i/o timeout — and
// sends no packet to an address outside the lab.
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

export type Reach = { ok: true } | { ok: false; error: string };

export function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const toInt = (a: string) => a.split('.').reduce((n, o) => (n << 8) + Number(o), 0) >>> 0;
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip) || !/^\d+\.\d+\.\d+\.\d+$/.test(base ?? '')) return false;
  const n = Number(bits ?? 32);
  const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
  return (toInt(ip) & mask) >>> 0 === (toInt(base) & mask) >>> 0;
}

export function goDialError(host: string, port: number, e: NodeJS.ErrnoException): string {
  const where = `dial tcp ${host}:${port}`;
  switch (e.code) {
    case 'ECONNREFUSED':
      return `${where}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `${where}: connect: no route to host`;
    case 'ENETUNREACH':
      return `${where}: connect: network is unreachable`;
    case 'ETIMEDOUT':
      return `${where}: i/o timeout`;
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
      return 'tls: failed to verify certificate: x509: certificate signed by unknown authority';
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `tls: failed to verify certificate: x509: certificate is not valid for ${host}`;
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return 'tls: failed to verify certificate: x509: certificate has expired or is not yet valid';
    default:
      return `${where}: ${e.message}`;
  }
}

export interface ReachOptions {
  caFile: string;
  serviceCidr: string;
  timeoutMs: number;
}

export async function reachApi(host: string, port: number, o: ReachOptions): Promise<Reach> {
  if (inCidr(host, o.serviceCidr)) {
    await new Promise((r) => setTimeout(r, o.timeoutMs));
    return { ok: false, error: `dial tcp ${host}:${port}: i/o timeout` };
  }
  let ca: Buffer;
  try {
    ca = readFileSync(o.caFile);
  } catch (e) {
    return { ok: false, error: `open ${o.caFile}: ${(e as Error).message}` };
  }
  return new Promise((resolve) => {
    const sock = tls.connect({ host, port, ca: [ca], servername: /^\d/.test(host) ? undefined : host, rejectUnauthorized: true, timeout: o.timeoutMs });
    const done = (r: Reach) => {
      sock.destroy();
      resolve(r);
    };
    sock.once('secureConnect', () => done({ ok: true }));
    sock.once('timeout', () => done({ ok: false, error: `dial tcp ${host}:${port}: i/o timeout` }));
    sock.once('error', (e: NodeJS.ErrnoException) => done({ ok: false, error: goDialError(host, port, e) }));
  });
}
