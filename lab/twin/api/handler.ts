// The Kubernetes API subset: discovery, health, and CRUD/patch/watch for every resource the registry knows.
import type { IncomingMessage, ServerResponse } from 'node:http';
import YAML from 'yaml';
import type { EtcdClient } from '../etcd/client.ts';
import { kubeVersion } from '../version.ts';
import { apiGroup, apiGroupList, apiVersions, openapiV2Json, openapiV2Protobuf, resourceList } from './discovery.ts';
import { applyPatch, patchTypeOf, PatchError } from './patch.ts';
import { BUILTIN, type ResourceInfo, type ResourceRegistry, apiVersionOf, keyPrefix } from './resources.ts';
import { matchFields, matchLabels, parseLabelSelector } from './selectors.ts';
import { ApiError, badRequest, notFound } from './status.ts';
import { pendingDeletion } from './finalizers.ts';
import { evict } from './eviction.ts';
import { etcdFailure, type ObjectStore } from './store.ts';
import { toTable } from './table.ts';
import { serveWatch } from './watch.ts';

export interface ApiHooks {
  /** Runs before an object is deleted; a failure keeps the object (as a finalizer that has not finished). */
  beforeDelete?(info: ResourceInfo, obj: any): Promise<void>;
}

interface Target {
  info: ResourceInfo;
  ns?: string;
  name?: string;
  sub?: string;
}

function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-cache, private', ...headers });
  res.end(text);
}

function parseBody(body: Buffer): any {
  const text = body.toString('utf8');
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    try {
      return YAML.parse(text);
    } catch (e) {
      throw badRequest(`the body of the request was in an unknown format: ${(e as Error).message}`);
    }
  }
}

const NAMESPACES = BUILTIN.find((x) => x.resource === 'namespaces')!;
const CRDS = BUILTIN.find((x) => x.resource === 'customresourcedefinitions')!;

export class KubeApi {
  constructor(
    private store: ObjectStore,
    private etcd: EtcdClient,
    private registry: ResourceRegistry,
    private opts: { serverAddress: string; hooks?: ApiHooks },
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://x');
    try {
      // Protobuf bodies are not understood: 415 makes client-go fall back to JSON.
      if (body.length && (req.headers['content-type'] ?? '').includes('protobuf')) {
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
        );
      }
      if (await this.handleFixed(url, req, res)) return;
      const target = await this.resolve(url.pathname);
      if (!target) {
        send(res, 404, new ApiError(404, 'NotFound', 'the server could not find the requested resource').toStatus());
        return;
      }
      await this.handleResource(target, url, req, res, body);
    } catch (e) {
      const err = e instanceof PatchError ? new ApiError(422, 'Invalid', e.message) : e instanceof ApiError ? e : etcdFailure(e);
      if (!res.headersSent) send(res, err.code, err.toStatus(), err.headers());
      else res.end();
    }
  }

  /** Paths that are not resources: discovery, version, health, OpenAPI. */
  private async handleFixed(url: URL, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const p = url.pathname.replace(/\/+$/, '') || '/';
    if (p === '/version') return (send(res, 200, kubeVersion()), true);
    if (p === '/api') return (send(res, 200, apiVersions(this.opts.serverAddress)), true);
    if (p === '/api/v1')
      return (
        send(
          res,
          200,
          resourceList(
            'v1',
            BUILTIN.filter((x) => x.group === ''),
          ),
        ),
        true
      );
    if (p === '/apis') return (send(res, 200, apiGroupList(await this.registry.all())), true);
    const g = /^\/apis\/([^/]+)$/.exec(p);
    if (g) {
      const doc = apiGroup(await this.registry.all(), g[1]);
      send(res, doc ? 200 : 404, doc ?? notFound('', 'groups', g[1]).toStatus());
      return true;
    }
    const gv = /^\/apis\/([^/]+)\/([^/]+)$/.exec(p);
    if (gv) {
      const infos = (await this.registry.all()).filter((x) => x.group === gv[1] && x.version === gv[2]);
      if (!infos.length) send(res, 404, new ApiError(404, 'NotFound', 'the server could not find the requested resource').toStatus());
      else send(res, 200, resourceList(`${gv[1]}/${gv[2]}`, infos));
      return true;
    }
    if (/^\/(readyz|livez|healthz)(\/.*)?$/.test(p)) {
      await this.health(p, url, res);
      return true;
    }
    if (p === '/openapi/v2') {
      if ((req.headers.accept ?? '').includes('protobuf')) {
        const buf = openapiV2Protobuf();
        res.writeHead(200, { 'content-type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'content-length': buf.length });
        res.end(buf);
      } else send(res, 200, openapiV2Json());
      return true;
    }
    return false;
  }

  /** /readyz etc.: "ok" while etcd answers a quorum read, as kube-apiserver's etcd check does. */
  private async health(p: string, url: URL, res: ServerResponse): Promise<void> {
    let ok = true;
    try {
      await this.etcd.call('/v3/kv/range', { key: Buffer.from('health').toString('base64') }, 2000);
    } catch {
      ok = false;
    }
    const name = p.split('/')[1];
    let text = ok ? 'ok' : `[-]etcd failed: reason withheld\n${name} check failed`;
    if (url.searchParams.has('verbose'))
      text = `[+]ping ok\n[${ok ? '+' : '-'}]etcd ${ok ? 'ok' : 'failed: reason withheld'}\n${name} check ${ok ? 'passed' : 'failed'}`;
    res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end(text);
  }

  /** /api/v1/... and /apis/<g>/<v>/... → resource, namespace, name, subresource. */
  private async resolve(pathname: string): Promise<Target | undefined> {
    const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === 'api' && parts.length >= 3) {
      group = '';
      version = parts[1];
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 4) {
      group = parts[1];
      version = parts[2];
      rest = parts.slice(3);
    } else return undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && !(group === '' && (rest[2] === 'status' || rest[2] === 'finalize') && rest.length === 3)) {
      const info = await this.registry.find(group, version, rest[2]);
      if (!info || !info.namespaced) return undefined;
      return { info, ns: rest[1], name: rest[3], sub: rest[4] };
    }
    const info = await this.registry.find(group, version, rest[0]);
    if (!info) return undefined;
    return { info, name: rest[1], sub: rest[2] };
  }

  private async handleResource(t: Target, url: URL, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const q = url.searchParams;
    const method = req.method ?? 'GET';
    const dryRun = q.getAll('dryRun').includes('All');
    const accept = req.headers.accept ?? '';
    const wantTable = accept.includes('as=Table');
    if (method === 'GET' && t.name) {
      const obj = await this.store.get(t.info, t.ns, t.name);
      send(res, 200, wantTable ? toTable(t.info.kind, [obj], obj.metadata.resourceVersion, q.get('includeObject') ?? 'Metadata') : obj);
      return;
    }
    if (method === 'GET') {
      if (q.get('watch') === 'true' || q.get('watch') === '1') {
        await serveWatch(req, res, this.etcd, this.store, t.info, t.ns, {
          resourceVersion: q.get('resourceVersion') ?? undefined,
          labelSelector: q.get('labelSelector') ?? undefined,
          fieldSelector: q.get('fieldSelector') ?? undefined,
          timeoutSeconds: q.has('timeoutSeconds') ? Number(q.get('timeoutSeconds')) : undefined,
        });
        return;
      }
      const { items, revision } = await this.store.list(t.info, t.ns);
      const labels = parseLabelSelector(q.get('labelSelector') ?? '');
      const fields = q.get('fieldSelector') ?? '';
      const selected = items.filter((o) => matchLabels(labels, o.metadata?.labels) && (!fields || matchFields(fields, o)));
      if (wantTable) send(res, 200, toTable(t.info.kind, selected, String(revision), q.get('includeObject') ?? 'Metadata'));
      else send(res, 200, { kind: `${t.info.kind}List`, apiVersion: apiVersionOf(t.info), metadata: { resourceVersion: String(revision) }, items: selected });
      return;
    }
    if (method === 'POST' && t.name && t.sub === 'eviction' && t.info.group === '' && t.info.resource === 'pods') {
      const deletePod = async () => {
        await this.opts.hooks?.beforeDelete?.(t.info, await this.store.get(t.info, t.ns, t.name!));
        await this.store.delete(t.info, t.ns, t.name!);
      };
      send(res, 201, await evict(this.store, t.ns!, t.name, parseBody(body), deletePod, dryRun));
      return;
    }
    if (method === 'POST' && !t.name) {
      const obj = parseBody(body);
      await this.checkNamespace(t);
      this.checkKind(t.info, obj);
      if (t.info === CRDS) this.acceptCRD(obj);
      if (dryRun) {
        if (obj.metadata?.name && (await this.store.tryGet(t.info, t.ns, obj.metadata.name)))
          throw new ApiError(409, 'AlreadyExists', `${t.info.resource} "${obj.metadata.name}" already exists`);
        send(res, 201, this.store.present(t.info, obj));
        return;
      }
      const created = await this.store.create(t.info, t.ns, obj);
      if (t.info === CRDS) this.registry.invalidate();
      send(res, 201, created);
      return;
    }
    if (method === 'PUT' && t.name) {
      const obj = parseBody(body);
      this.checkKind(t.info, obj);
      if (t.info === CRDS) this.acceptCRD(obj);
      const opts = {
        expectedRV: obj.metadata?.resourceVersion,
        onlyStatus: t.sub === 'status',
        keepStatus: t.sub !== 'status' && t.info.status && t.info !== CRDS,
      };
      if (dryRun) return send(res, 200, obj);
      const updated = await this.store.update(t.info, t.ns, t.name, obj, opts);
      if (t.info === CRDS) this.registry.invalidate();
      send(res, 200, updated);
      return;
    }
    if (method === 'PATCH' && t.name) {
      await this.patch(t, req, res, body, dryRun);
      return;
    }
    if (method === 'DELETE' && t.name) {
      await this.opts.hooks?.beforeDelete?.(t.info, await this.store.get(t.info, t.ns, t.name));
      const obj = await this.store.delete(t.info, t.ns, t.name);
      // Held by a finalizer: the apiserver answers with the marked object (handlers/delete.go).
      if (pendingDeletion(obj)) return send(res, 200, obj);
      await this.cascade(t.info, obj);
      send(res, 200, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name: t.name, group: t.info.group, kind: t.info.resource, uid: obj.metadata?.uid },
      });
      return;
    }
    if (method === 'DELETE') {
      const { items } = await this.store.list(t.info, t.ns);
      const labels = parseLabelSelector(q.get('labelSelector') ?? '');
      const deleted = [];
      for (const o of items.filter((x) => matchLabels(labels, x.metadata?.labels))) {
        await this.opts.hooks?.beforeDelete?.(t.info, o);
        const gone = await this.store.delete(t.info, o.metadata.namespace, o.metadata.name);
        deleted.push(gone);
        if (!pendingDeletion(gone)) await this.cascade(t.info, o);
      }
      send(res, 200, { kind: `${t.info.kind}List`, apiVersion: apiVersionOf(t.info), metadata: {}, items: deleted });
      return;
    }
    send(res, 405, new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`).toStatus());
  }

  private async patch(t: Target, req: IncomingMessage, res: ServerResponse, body: Buffer, dryRun: boolean): Promise<void> {
    const type = patchTypeOf(req.headers['content-type'] ?? '');
    if (!type)
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
      );
    const patch = parseBody(body);
    for (let attempt = 0; ; attempt++) {
      const current = await this.store.tryGet(t.info, t.ns, t.name!);
      if (!current) {
        if (type !== 'apply') throw notFound(t.info.group, t.info.resource, t.name!);
        // Server-side apply creates what does not exist.
        await this.checkNamespace(t);
        if (t.info === CRDS) this.acceptCRD(patch);
        if (dryRun) return send(res, 201, patch);
        const created = await this.store.create(t.info, t.ns, { ...patch, metadata: { ...(patch.metadata ?? {}), name: t.name } });
        if (t.info === CRDS) this.registry.invalidate();
        return send(res, 201, created);
      }
      const next = applyPatch(type, current, patch);
      if (t.info === CRDS) this.acceptCRD(next);
      if (dryRun) return send(res, 200, next);
      const expectedRV = (type !== 'apply' && patch?.metadata?.resourceVersion) || current.metadata.resourceVersion;
      try {
        const updated = await this.store.update(t.info, t.ns, t.name!, next, {
          expectedRV,
          onlyStatus: t.sub === 'status',
          keepStatus: t.sub !== 'status' && t.info.status && t.info !== CRDS,
        });
        if (t.info === CRDS) this.registry.invalidate();
        return send(res, 200, updated);
      } catch (e) {
        // A patch without a precondition retries on a concurrent write, as the apiserver's GuaranteedUpdate does.
        const userPrecondition = type !== 'apply' && patch?.metadata?.resourceVersion;
        if (e instanceof ApiError && e.reason === 'Conflict' && !userPrecondition && attempt < 5) continue;
        throw e;
      }
    }
  }

  private checkKind(info: ResourceInfo, obj: any): void {
    if (obj?.kind && obj.kind !== info.kind)
      throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersionOf(info)})`);
  }

  private async checkNamespace(t: Target): Promise<void> {
    if (!t.info.namespaced || !t.ns) return;
    if (!(await this.store.tryGet(NAMESPACES, undefined, t.ns))) throw notFound('', 'namespaces', t.ns);
  }

  /** A stored CRD is at once Established with its names accepted (no naming conflicts are checked). */
  private acceptCRD(obj: any): void {
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    obj.status = {
      ...(obj.status ?? {}),
      acceptedNames: obj.spec?.names ?? {},
      storedVersions: (obj.spec?.versions ?? []).filter((v: any) => v.storage).map((v: any) => v.name),
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found', lastTransitionTime: now },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted', lastTransitionTime: now },
      ],
    };
  }

  /** What controllers do after a delete: a namespace takes its objects, a CRD its custom resources. */
  private async cascade(info: ResourceInfo, obj: any): Promise<void> {
    if (info === NAMESPACES) {
      for (const r of await this.registry.all()) {
        if (r.namespaced) await this.etcd.deletePrefix(`${keyPrefix(r)}${obj.metadata.name}/`);
      }
    }
    if (info === CRDS) {
      await this.etcd.deletePrefix(keyPrefix({ group: obj.spec?.group, resource: obj.spec?.names?.plural }));
      this.registry.invalidate();
    }
  }
}
