// Container logs of the add-on twins' pods, readable as on k3s: through the API
// (GET /api/v1/namespaces/<ns>/pods/<name>/log?container=<c> — what `kubectl logs [-c c] [-p]` uses, served
// by any server) and on the node where kubelet keeps them (/var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log).
// Each container keeps its own log per run (its restart count), as kubelet does: the current run, or the one
// before it with previous=true. The API copy lives in etcd (appended in chunks, the last LOG_KEEP lines
// served), so every server answers the same. An agent's kubelet has no etcd: its pods' logs stay in the
// node's files, and the API forwards a request for a pod on an agent to that node's kubelet
// (GET https://<node>:10250/containerLogs/<ns>/<pod>/<container>, as kube-apiserver does: pkg/registry/core/
// pod/strategy.go LogLocation), presenting a client certificate of the cluster's client CA and verifying
// the kubelet's serving certificate against the server CA. Which container, and whether it has a log yet, is decided as upstream does (kubernetes
// v1.33.5 pkg/registry/core/pod/strategy.go LogLocation; pkg/kubelet/kubelet_pods.go validateContainerLogStatus).
import { appendFileSync, mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import type { EtcdClient } from '../etcd/client.ts';
import type { ObjectStore } from '../api/store.ts';
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';
import { goDialError } from './reach.ts';

const LOG_KEEP = 2000;
/** Chunks kept per pod; each flush appends one (only the new lines), so etcd never rewrites a long log. */
const CHUNKS_KEEP = 200;
const PODS = BUILTIN.find((x) => x.resource === 'pods')!;
const NODES = BUILTIN.find((x) => x.resource === 'nodes')!;

/** How the API reaches a kubelet: the server CA its serving certificate is checked against, a client certificate. */
export interface KubeletClient {
  ca: string;
  cert: string;
  key: string;
}
const logPrefix = (ns: string, pod: string) => `/twin/podlogs/${ns}/${pod}/`;
const runPrefix = (ns: string, pod: string, container: string, run: number) => `${logPrefix(ns, pod)}${container}/${String(run).padStart(6, '0')}/`;
const bad = (message: string) => new ApiError(400, 'BadRequest', message);

export class PodLogs {
  private pending = new Map<string, string[]>();
  private chunks = new Map<string, number>();
  private seq = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private etcd: EtcdClient | undefined,
    private fileRoot = '/var/log/pods',
    private kubelet?: () => KubeletClient,
  ) {}

  /** A logger for one run (restart count) of one container of one pod: each line goes to the node's file and (batched) to etcd. */
  writer(ns: string, pod: string, uid: string, container: string, run = 0): (line: string) => void {
    const dir = join(this.fileRoot, `${ns}_${pod}_${uid}`, container);
    return (line: string) => {
      try {
        mkdirSync(dir, { recursive: true });
        appendFileSync(join(dir, `${run}.log`), `${new Date().toISOString()} stderr F ${line}\n`);
      } catch {
        /* the node's disk is full: the API copy still gets it */
      }
      if (!this.etcd) return;
      const key = runPrefix(ns, pod, container, run);
      this.pending.set(key, [...(this.pending.get(key) ?? []), line]);
      this.timer ??= setTimeout(() => void this.flush(), 500);
    };
  }

  async flush(): Promise<void> {
    this.timer = undefined;
    const etcd = this.etcd;
    if (!etcd) return;
    const batch = [...this.pending];
    this.pending.clear();
    for (const [prefix, lines] of batch) {
      try {
        // Keys sort in write order: time, then a counter for writes within one millisecond.
        await etcd.put(`${prefix}${String(Date.now()).padStart(15, '0')}-${String(this.seq++ % 1e6).padStart(6, '0')}`, JSON.stringify(lines));
        const n = (this.chunks.get(prefix) ?? 0) + 1;
        this.chunks.set(prefix, n);
        if (n > CHUNKS_KEEP * 1.5) await this.trim(prefix);
      } catch {
        // etcd unavailable: keep the lines for the next flush
        this.pending.set(prefix, [...lines, ...(this.pending.get(prefix) ?? [])]);
        this.timer ??= setTimeout(() => void this.flush(), 2000);
      }
    }
  }

  private async trim(prefix: string): Promise<void> {
    const etcd = this.etcd!;
    const { kvs } = await etcd.list(prefix);
    const old = kvs
      .map((kv) => kv.key)
      .sort()
      .slice(0, -CHUNKS_KEEP);
    for (const k of old) await etcd.delete(k);
    this.chunks.set(prefix, kvs.length - old.length);
  }

  /** One container's log: its newest run, or the run before it (`previous`). */
  async read(ns: string, pod: string, container: string, previous = false): Promise<string[]> {
    if (!this.etcd) return [];
    const { kvs } = await this.etcd.list(`${logPrefix(ns, pod)}${container}/`);
    const runs = [...new Set(kvs.map((kv) => kv.key.slice(logPrefix(ns, pod).length + container.length + 1).split('/')[0]))].sort();
    const run = runs[runs.length - (previous ? 2 : 1)];
    if (run === undefined) return [];
    return kvs
      .filter((kv) => kv.key.startsWith(`${logPrefix(ns, pod)}${container}/${run}/`))
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .flatMap((kv) => JSON.parse(kv.value) as string[])
      .slice(-LOG_KEEP);
  }

  async clear(ns: string, pod: string): Promise<void> {
    for (const k of [...this.chunks.keys()]) if (k.startsWith(logPrefix(ns, pod))) this.chunks.delete(k);
    await this.etcd?.deletePrefix(logPrefix(ns, pod)).catch(() => undefined);
  }

  /** Serves pods/<name>/log; false when the request is not for it. */
  async handle(req: IncomingMessage, res: ServerResponse, store: ObjectStore): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'https://x');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log\/?$/.exec(url.pathname);
    if (!m || (req.method ?? 'GET') !== 'GET') return false;
    const [ns, pod] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    try {
      const obj = await store.get(PODS, ns, pod);
      const previous = url.searchParams.get('previous') === 'true';
      const container = whichContainer(obj, url.searchParams.get('container') ?? '');
      refuseWithoutLog(obj, container, previous);
      const tail = url.searchParams.get('tailLines');
      const node = this.kubelet && obj.spec?.nodeName ? await store.tryGet(NODES, undefined, obj.spec.nodeName) : undefined;
      let body: string;
      if (node && !Object.prototype.hasOwnProperty.call(node.metadata?.labels ?? {}, 'node-role.kubernetes.io/control-plane')) {
        body = await fromKubelet(node, this.kubelet!(), ns, pod, container, previous, tail);
      } else {
        let lines = await this.read(ns, pod, container, previous);
        if (tail !== null && Number(tail) >= 0) lines = Number(tail) === 0 ? [] : lines.slice(-Number(tail));
        body = lines.map((l) => `${l}\n`).join('');
      }
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

/** A pod's container log from its node's kubelet (an agent's: the lines live only there). */
function fromKubelet(node: any, c: KubeletClient, ns: string, pod: string, container: string, previous: boolean, tail: string | null): Promise<string> {
  const ip = (node.status?.addresses ?? []).find((a: any) => a.type === 'InternalIP')?.address;
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 10250;
  const q = new URLSearchParams({ ...(previous ? { previous: 'true' } : {}), ...(tail !== null ? { tailLines: tail } : {}) }).toString();
  const url = `https://${ip}:${port}/containerLogs/${encodeURIComponent(ns)}/${encodeURIComponent(pod)}/${encodeURIComponent(container)}${q ? `?${q}` : ''}`;
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: c.ca, cert: c.cert, key: c.key, rejectUnauthorized: true, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(text);
        else
          reject(
            new ApiError(res.statusCode === 404 ? 404 : 500, res.statusCode === 404 ? 'NotFound' : 'InternalError', text.trim() || `${url}: ${res.statusCode}`),
          );
      });
    });
    req.on('timeout', () => req.destroy(new Error(`Get "${url}": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`)));
    // kube-apiserver's words when it cannot reach the kubelet: the Go client's error, as an InternalError.
    req.on('error', (e: NodeJS.ErrnoException) =>
      reject(new ApiError(500, 'InternalError', e.message.startsWith('Get "') ? e.message : `Get "${url}": ${goDialError(ip, port, e)}`)),
    );
  });
}

/** The container a log request is for: the one named, or the pod's only (non-init) container. */
function whichContainer(pod: any, named: string): string {
  const name = pod.metadata?.name;
  const names = (pod.spec?.containers ?? []).map((c: any) => c.name);
  const inits = (pod.spec?.initContainers ?? []).map((c: any) => c.name);
  if (named) {
    if (![...names, ...inits].includes(named)) throw bad(`container ${named} is not valid for pod ${name}`);
    return named;
  }
  if (names.length === 1) return names[0];
  if (names.length === 0) throw bad(`a container name must be specified for pod ${name}`);
  throw bad(
    `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]${inits.length ? ` or one of the init containers: [${inits.join(' ')}]` : ''}`,
  );
}

/** kubelet's answer for a container that has no log to show (never started, or no previous run). */
function refuseWithoutLog(pod: any, container: string, previous: boolean): void {
  const st = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((c: any) => c.name === container);
  const name = pod.metadata?.name;
  if (!st) throw bad(`container "${container}" in pod "${name}" is waiting to start - no logs yet`);
  const last = st.lastState?.terminated;
  if (previous) {
    if (!last) throw bad(`previous terminated container "${container}" in pod "${name}" not found`);
    return;
  }
  if (st.state?.running || st.state?.terminated || last) return;
  const reason = st.state?.waiting?.reason;
  // The twin's kube-vip container records no lastState across its restarts; its log is there all the same.
  if (reason === 'CrashLoopBackOff') return;
  if (reason === 'ErrImagePull') throw bad(`container "${container}" in pod "${name}" is waiting to start: image can't be pulled`);
  if (reason === 'ImagePullBackOff') throw bad(`container "${container}" in pod "${name}" is waiting to start: trying and failing to pull image`);
  throw bad(`container "${container}" in pod "${name}" is waiting to start: ${reason ?? ''}`);
}
