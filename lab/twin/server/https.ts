// One HTTPS listener on :6443 for the supervisor paths and the Kubernetes API, as in k3s. Clients of the
// API authenticate with a client certificate of the cluster's client CA; anonymous requests get 401
// (k3s runs kube-apiserver with --anonymous-auth=false). Supervisor paths check the token instead.
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { readFileSync } from 'node:fs';
import type { TlsPaths } from '../pki.ts';

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer, user: string | undefined) => Promise<void> | void;

export function startHttps(p: TlsPaths, host: string, port: number, handler: Handler): Promise<https.Server> {
  const server = https.createServer(
    {
      cert: readFileSync(p.serving),
      key: readFileSync(p.servingKey),
      ca: [readFileSync(p.clientCA)],
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const sock = req.socket as TLSSocket;
        const user = sock.authorized ? ((sock.getPeerCertificate()?.subject?.CN as string | undefined) ?? 'unknown') : undefined;
        Promise.resolve(handler(req, res, Buffer.concat(chunks), user)).catch((e) => {
          if (!res.headersSent) {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(String(e?.message ?? e));
          } else res.end();
        });
      });
    },
  );
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host || undefined, () => resolve(server));
  });
}

export function unauthorized(res: ServerResponse): void {
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
  res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Basic auth as k3s's supervisor expects it: user "server" or "node", password the token secret. */
export function tokenFromBasicAuth(req: IncomingMessage): { user: string; password: string } | undefined {
  const h = req.headers.authorization ?? '';
  if (!h.startsWith('Basic ')) return undefined;
  const dec = Buffer.from(h.slice(6), 'base64').toString('utf8');
  const i = dec.indexOf(':');
  return i < 0 ? undefined : { user: dec.slice(0, i), password: dec.slice(i + 1) };
}
