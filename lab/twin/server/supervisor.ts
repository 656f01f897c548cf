// Supervisor paths served next to the API on :6443 (k3s pkg/server/router.go): /cacerts and /ping are
// anonymous; /v1-k3s/config (critical args), /v1-k3s/server-bootstrap (the cluster CAs, which k3s moves
// encrypted with the token) and /db/info (etcd members, pkg/etcd/etcd.go infoHandler) need the server token;
// /v1-k3s/node (the twin's stand-in for the kubelet's registration) accepts the server or agent token, as
// do /v1-k3s/client-ca.crt, /v1-k3s/server-ca.crt and the node's kubelet certificates
// (/v1-k3s/client-kubelet.crt, /v1-k3s/serving-kubelet.crt), which also need the node's name and password in
// the k3s-Node-Name / k3s-Node-Password headers (pkg/nodepassword; k3s pkg/server/handlers/router.go).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tokenFromBasicAuth } from './https.ts';

export interface SupervisorDeps {
  caPem(): string;
  serverSecret(): string;
  agentSecret(): string;
  criticalArgs(): Record<string, string>;
  bootstrap(): unknown;
  dbInfo(): Promise<unknown>;
  registerNode(body: any): Promise<unknown>;
  clientCA(): string;
  /** Verifies the node's password (403 when it does not match), then signs its certificate. */
  nodeCert(kind: 'client' | 'serving', node: string, password: string, ips: string[]): Promise<string>;
}

const NODE_CERTS: Record<string, 'client' | 'serving'> = { '/v1-k3s/client-kubelet.crt': 'client', '/v1-k3s/serving-kubelet.crt': 'serving' };

function json(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Returns true when the request was a supervisor path and has been answered. */
export async function handleSupervisor(req: IncomingMessage, res: ServerResponse, body: Buffer, d: SupervisorDeps): Promise<boolean> {
  const path = new URL(req.url ?? '/', 'https://x').pathname;
  if (path === '/cacerts') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(d.caPem());
    return true;
  }
  if (path === '/ping') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('pong');
    return true;
  }
  const needsServer = path === '/v1-k3s/config' || path === '/v1-k3s/server-bootstrap' || path === '/db/info';
  const isNode = path === '/v1-k3s/node' || path === '/v1-k3s/client-ca.crt' || path === '/v1-k3s/server-ca.crt' || path in NODE_CERTS;
  if (!needsServer && !isNode) return false;
  const cred = tokenFromBasicAuth(req);
  const okServer = cred?.password === d.serverSecret();
  const okAgent = okServer || cred?.password === d.agentSecret();
  if ((needsServer && !okServer) || (isNode && !okAgent)) {
    res.writeHead(401, { 'content-type': 'text/plain' });
    res.end('Unauthorized');
    return true;
  }
  try {
    if (path === '/v1-k3s/config') json(res, 200, { criticalArgs: d.criticalArgs() });
    else if (path === '/v1-k3s/server-bootstrap') json(res, 200, d.bootstrap());
    else if (path === '/db/info') json(res, 200, await d.dbInfo());
    else if (path === '/v1-k3s/client-ca.crt' || path === '/v1-k3s/server-ca.crt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(path === '/v1-k3s/client-ca.crt' ? d.clientCA() : d.caPem());
    } else if (path in NODE_CERTS) {
      const node = String(req.headers['k3s-node-name'] ?? '');
      if (!node) {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end('header k3s-Node-Name is required');
        return true;
      }
      const ips = String(req.headers['k3s-node-ip'] ?? '').split(',').filter(Boolean);
      const pem = await d.nodeCert(NODE_CERTS[path], node, String(req.headers['k3s-node-password'] ?? ''), ips);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(pem);
    }
    else json(res, 200, await d.registerNode(JSON.parse(body.toString('utf8') || '{}')));
  } catch (e) {
    const status = (e as { status?: number }).status ?? 503;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end((e as Error).message);
  }
  return true;
}
