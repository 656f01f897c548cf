// A local port that reaches a server's 127.0.0.1:6443 through the run's SSH connection to it, so the
// engine's Kubernetes client works when the operator cannot route to the node LAN (dev sits behind NAT).
// The API's serving certificate carries 127.0.0.1 as a SAN, so TLS verifies through the tunnel.
import { createServer, type Server, type Socket } from 'node:net';
import type { Remote } from '../transport/types.ts';
import { OWN_API } from './get-through.ts';

export interface Tunnel {
  port: number;
  /** Why the last connection through the tunnel could not be forwarded (undefined once one was). */
  failure(): unknown;
  close(): Promise<void>;
}

interface TunnelOptions {
  /**
   * The listener and its connections keep no process alive (unref): a tunnel a run opens once and never
   * closes itself (src/kube/api-access.ts) ends with the process.
   */
  unref?: boolean;
}

export async function openTunnel(remote: Remote, target = { host: OWN_API.address, port: OWN_API.port }, opts: TunnelOptions = {}): Promise<Tunnel> {
  if (!remote.forward) throw new Error(`the connection to ${remote.host} cannot forward ports`);
  const sockets = new Set<Socket>();
  let failure: unknown;
  const server: Server = createServer((local) => {
    if (opts.unref) local.unref();
    sockets.add(local);
    local.on('close', () => sockets.delete(local));
    remote.forward!(target.host, target.port).then(
      (upstream) => {
        failure = undefined;
        local.pipe(upstream).pipe(local);
        upstream.on('error', () => local.destroy());
        local.on('error', () => upstream.destroy());
        local.on('close', () => upstream.destroy());
      },
      (err: unknown) => {
        failure = err;
        local.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  if (opts.unref) server.unref();
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    failure: () => failure,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
