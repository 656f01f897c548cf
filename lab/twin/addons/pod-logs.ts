// Container logs of the add-on twins' pods, readable as on k3s: through the API
// (GET /api/v1/namespaces/<ns>/pods/<name>/log — what `kubectl logs` uses, served by any server) and on the
// node where kubelet keeps them (/var/log/pods/<ns>_<pod>_<uid>/<container>/0.log). The API copy lives in
// etcd (last LOG_KEEP lines per pod), so every server answers the same.
import { appendFileSync, mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { EtcdClient } from '../etcd/client.ts';
import type { ObjectStore } from '../api/store.ts';
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';

const LOG_KEEP = 2000;
const PODS = BUILTIN.find((x) => x.resource === 'pods')!;
export const logKey = (ns: string, pod: string) => `/twin/podlogs/${ns}/${pod}`;

export class PodLogs {
  private pending = new Map<string, string[]>();
  private timer?: NodeJS.Timeout;

  constructor(private etcd: EtcdClient, private fileRoot = '/var/log/pods') {}

  /** A logger for one container of one pod: each line goes to the node's file and (batched) to etcd. */
  writer(ns: string, pod: string, uid: string, container: string): (line: string) => void {
    const dir = join(this.fileRoot, `${ns}_${pod}_${uid}`, container);
    return (line: string) => {
      try {
        mkdirSync(dir, { recursive: true });
        appendFileSync(join(dir, '0.log'), `${new Date().toISOString()} stderr F ${line}\n`);
      } catch {
        /* the node's disk is full: the API copy still gets it */
      }
      const key = logKey(ns, pod);
      this.pending.set(key, [...(this.pending.get(key) ?? []), line]);
      this.timer ??= setTimeout(() => void this.flush(), 500);
    };
  }

  async flush(): Promise<void> {
    this.timer = undefined;
    const batch = [...this.pending];
    this.pending.clear();
    for (const [key, lines] of batch) {
      try {
        const cur = await this.etcd.get(key);
        const all = [...(cur ? (JSON.parse(cur.value) as string[]) : []), ...lines].slice(-LOG_KEEP);
        await this.etcd.put(key, JSON.stringify(all));
      } catch {
        // etcd unavailable: keep the lines for the next flush
        this.pending.set(key, [...lines, ...(this.pending.get(key) ?? [])]);
        this.timer ??= setTimeout(() => void this.flush(), 2000);
      }
    }
  }

  async read(ns: string, pod: string): Promise<string[]> {
    const kv = await this.etcd.get(logKey(ns, pod));
    return kv ? (JSON.parse(kv.value) as string[]) : [];
  }

  async clear(ns: string, pod: string): Promise<void> {
    await this.etcd.delete(logKey(ns, pod)).catch(() => undefined);
  }

  /** Serves pods/<name>/log; false when the request is not for it. */
  async handle(req: IncomingMessage, res: ServerResponse, store: ObjectStore): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'https://x');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log\/?$/.exec(url.pathname);
    if (!m || (req.method ?? 'GET') !== 'GET') return false;
    const [ns, pod] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    try {
      await store.get(PODS, ns, pod);
      let lines = await this.read(ns, pod);
      const tail = url.searchParams.get('tailLines');
      if (tail !== null && Number(tail) >= 0) lines = Number(tail) === 0 ? [] : lines.slice(-Number(tail));
      const body = lines.map((l) => `${l}\n`).join('');
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(503, 'ServiceUnavailable', (e as Error).message);
      const body = JSON.stringify(err.toStatus());
      res.writeHead(err.code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }
    return true;
  }
}
