// The object operations of the datastore (get, list, create, update, delete), done through a server's
// Kubernetes API instead: what a node without etcd (an agent's kubelet) uses. It authenticates with the
// node's client certificate (CN system:node:<name>, from the supervisor's /v1-k3s/client-kubelet.crt) and
// verifies the server against the cluster's server CA, as the kubelet's kubeconfig does. API failures come
// back as the same ApiError (the server's metav1.Status), so callers treat both stores alike. An agent's
// requests go through its client load balancer (../agent-lb.ts): a server that cannot be dialled is
// skipped for the next.
import https from 'node:https';
import type { AgentLoadBalancer } from '../agent-lb.ts';
import { DIAL_ERRORS } from '../server/fetch.ts';
import { type ResourceInfo } from './resources.ts';
import { ApiError, notFound, unavailable } from './status.ts';

/** A request whose connection was never made (the load balancer tries the next server). */
class DialFailed extends Error {
  readonly dial = true;
}

export interface ClientCredentials {
  ca: string;
  cert: string;
  key: string;
}

function resourcePath(info: ResourceInfo, ns?: string, name?: string, sub?: string): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  const nsPart = info.namespaced && ns ? `/namespaces/${encodeURIComponent(ns)}` : '';
  return `${base}${nsPart}/${info.resource}${name ? `/${encodeURIComponent(name)}` : ''}${sub ? `/${sub}` : ''}`;
}

export class ApiStore {
  private agent: https.Agent;

  constructor(
    private server: string | Pick<AgentLoadBalancer, 'dial'>,
    creds: ClientCredentials,
    private timeoutMs = 10_000,
  ) {
    this.agent = new https.Agent({ keepAlive: true, ca: creds.ca, cert: creds.cert, key: creds.key, rejectUnauthorized: true });
  }

  private async request(method: string, path: string, body?: unknown): Promise<any> {
    try {
      return await (typeof this.server === 'string'
        ? this.requestTo(this.server, method, path, body)
        : this.server.dial((base) => this.requestTo(base, method, path, body)));
    } catch (e) {
      if (e instanceof DialFailed) throw unavailable(e.message);
      throw e;
    }
  }

  private requestTo(server: string, method: string, path: string, body?: unknown): Promise<any> {
    const url = new URL(path, server);
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      let connected = false;
      const req = https.request(
        url,
        {
          method,
          agent: this.agent,
          headers: { accept: 'application/json', ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any;
            try {
              parsed = text ? JSON.parse(text) : {};
            } catch {
              parsed = undefined;
            }
            const code = res.statusCode ?? 0;
            if (code < 300 && parsed !== undefined) return resolve(parsed);
            if (parsed?.kind === 'Status') return reject(new ApiError(parsed.code ?? code, parsed.reason ?? '', parsed.message ?? text, parsed.details ?? {}));
            reject(new ApiError(code, code === 401 ? 'Unauthorized' : 'InternalError', text.trim() || `${method} ${url.href}: ${code}`));
          });
        },
      );
      req.on('socket', (sock) => (sock.connecting ? sock.once('connect', () => (connected = true)) : (connected = true)));
      req.setTimeout(this.timeoutMs, () =>
        req.destroy(new Error(`${method} "${url.href}": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`)),
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (e instanceof ApiError) return reject(e);
        if (!connected && (DIAL_ERRORS.has(e.code ?? '') || /Client\.Timeout/.test(e.message))) return reject(new DialFailed(e.message));
        reject(unavailable(e.message));
      });
      req.end(data);
    });
  }

  async get(info: ResourceInfo, ns: string | undefined, name: string): Promise<any> {
    return this.request('GET', resourcePath(info, ns, name));
  }

  async tryGet(info: ResourceInfo, ns: string | undefined, name: string): Promise<any | undefined> {
    try {
      return await this.get(info, ns, name);
    } catch (e) {
      if (e instanceof ApiError && e.reason === 'NotFound') return undefined;
      throw e;
    }
  }

  /** `fieldSelector` goes to the API, which sends only the objects it selects (a kubelet's own pods). */
  async list(info: ResourceInfo, ns?: string, opts: { fieldSelector?: string } = {}): Promise<{ items: any[]; revision: number }> {
    const query = opts.fieldSelector ? `?fieldSelector=${encodeURIComponent(opts.fieldSelector)}` : '';
    const r = await this.request('GET', `${resourcePath(info, ns)}${query}`);
    return { items: r.items ?? [], revision: Number(r.metadata?.resourceVersion ?? 0) };
  }

  async create(info: ResourceInfo, ns: string | undefined, obj: any): Promise<any> {
    return this.request('POST', resourcePath(info, ns), obj);
  }

  /** PUT (…/status with onlyStatus); expectedRV becomes metadata.resourceVersion, as the datastore's compare-and-swap. */
  async update(
    info: ResourceInfo,
    ns: string | undefined,
    name: string,
    obj: any,
    opts: { expectedRV?: string; keepStatus?: boolean; onlyStatus?: boolean } = {},
  ): Promise<any> {
    const metadata: any = { ...(obj?.metadata ?? {}), name, ...(info.namespaced && ns ? { namespace: ns } : {}) };
    delete metadata.resourceVersion;
    if (opts.expectedRV) metadata.resourceVersion = opts.expectedRV;
    const body = { apiVersion: info.group ? `${info.group}/${info.version}` : info.version, kind: info.kind, ...obj, metadata };
    return this.request('PUT', resourcePath(info, ns, name, opts.onlyStatus ? 'status' : undefined), body);
  }

  async delete(info: ResourceInfo, ns: string | undefined, name: string): Promise<any> {
    try {
      return await this.request('DELETE', resourcePath(info, ns, name));
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) throw notFound(info.group, info.resource, name);
      throw e;
    }
  }
}
