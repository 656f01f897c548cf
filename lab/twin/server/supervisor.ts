// Supervisor paths served next to the API on :6443 (k3s pkg/server/router.go): /cacerts and /ping are
// anonymous; /v1-k3s/server-bootstrap (the cluster CAs, which k3s moves encrypted with the token) needs the
// server token; /v1-k3s/config (the control config agents read, and joining servers read as user "node" in
// compareConfig) and /v1-k3s/node (the twin's stand-in for the kubelet's registration) accept the server or
// the agent token; /v1-k3s/apiservers (the apiserver addresses an agent's client load balancer dials, a
// JSON list of host:port; pkg/server/handlers/handlers.go APIServers) accepts the server or agent token;
// /db/info (etcd members, pkg/etcd/etcd.go handler and infoHandler) is served without
// credentials to a client on 127.0.0.1 or ::1 and needs the server token from anywhere else
// (pkg/server/auth/auth.go IsLocalOrHasRole; k3s-io/k3s#10001).
// A wrong password is answered 401 (a plain body, no metav1.Status), so a Go client's error reads
// `<url>: 401 Unauthorized` (pkg/clientaccess/token.go).
// /v1-k3s/client-ca.crt, /v1-k3s/server-ca.crt and the node's kubelet certificates
// (/v1-k3s/client-kubelet.crt, /v1-k3s/serving-kubelet.crt) accept the server or agent token and also need
// the node's name and password in the k3s-Node-Name / k3s-Node-Password headers (pkg/nodepassword; k3s
// pkg/server/handlers/router.go).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tokenFromBasicAuth } from './https.ts';

export interface SupervisorDeps {
  caPem(): string;
  serverSecret(): string;
  agentSecret(): string;
  criticalArgs(): Record<string, string>;
  bootstrap(): unknown;
  /** etcd's members as k3s encodes etcdserverpb.Member (see dbInfoJson). */
  dbInfo(): Promise<DbMember[]>;
  registerNode(body: any): Promise<unknown>;
  /** Every server's apiserver address as host:port (k3s: the `kubernetes` Endpoints and etcd's apiaddresses). */
  apiServers(): Promise<string[]>;
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

export interface DbMember {
  /** Decimal uint64, as etcd's gateway gives it. */
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/**
 * `{"members":[…]}` as Go's encoding/json writes k3s's Members struct: ID a bare uint64 number (written as
 * text, since a JS number would round it), every field omitted when empty (etcdserverpb.Member's omitempty tags).
 */
export function dbInfoJson(members: DbMember[]): string {
  const one = (m: DbMember) => {
    const parts: string[] = [];
    if (/^\d+$/.test(m.id) && m.id !== '0') parts.push(`"ID":${m.id}`);
    if (m.name) parts.push(`"name":${JSON.stringify(m.name)}`);
    if (m.peerURLs.length) parts.push(`"peerURLs":${JSON.stringify(m.peerURLs)}`);
    if (m.clientURLs.length) parts.push(`"clientURLs":${JSON.stringify(m.clientURLs)}`);
    if (m.isLearner) parts.push('"isLearner":true');
    return `{${parts.join(',')}}`;
  };
  return `{"members":[${members.map(one).join(',')}]}\n`;
}

/** k3s's util.SendError for a 500: a metav1.Status (apierrors.NewInternalError), which kubectl prints as "Error from server (InternalError): …". */
function internalError(res: ServerResponse, err: string): void {
  json(res, 500, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${err}`,
    reason: 'InternalError',
    details: { causes: [{ message: err }] },
    code: 500,
  });
}

const isLocal = (req: IncomingMessage) => ['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(req.socket.remoteAddress ?? '');

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
  if (path === '/db/info' && (isLocal(req) || tokenFromBasicAuth(req)?.password === d.serverSecret())) {
    if (req.method !== 'GET') {
      json(res, 405, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'method not allowed',
        reason: 'MethodNotAllowed',
        code: 405,
      });
      return true;
    }
    try {
      const text = dbInfoJson(await d.dbInfo());
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    } catch (e) {
      internalError(res, `failed to get etcd MemberList: ${(e as Error).message}`);
    }
    return true;
  }
  const needsServer = path === '/v1-k3s/server-bootstrap' || path === '/db/info';
  const isNode =
    path === '/v1-k3s/node' ||
    path === '/v1-k3s/config' ||
    path === '/v1-k3s/apiservers' ||
    path === '/v1-k3s/client-ca.crt' ||
    path === '/v1-k3s/server-ca.crt' ||
    path in NODE_CERTS;
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
    else if (path === '/v1-k3s/apiservers') json(res, 200, await d.apiServers());
    else if (path === '/v1-k3s/server-bootstrap') json(res, 200, d.bootstrap());
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
      const ips = String(req.headers['k3s-node-ip'] ?? '')
        .split(',')
        .filter(Boolean);
      const pem = await d.nodeCert(NODE_CERTS[path], node, String(req.headers['k3s-node-password'] ?? ''), ips);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(pem);
    } else json(res, 200, await d.registerNode(JSON.parse(body.toString('utf8') || '{}')));
  } catch (e) {
    const status = (e as { status?: number }).status ?? 503;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end((e as Error).message);
  }
  return true;
}
