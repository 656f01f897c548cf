// Kubernetes objects kept in etcd, one JSON value per key (/registry/<group>/<resource>/[<ns>/]<name>),
// so every server answers the same. resourceVersion is the key's etcd mod revision, as in kube-apiserver's
// etcd3 storage; an update carrying a stale resourceVersion is a 409 Conflict.
import { randomUUID } from 'node:crypto';
import { EtcdClient, EtcdError, type KV } from '../etcd/client.ts';
import { type ResourceInfo, objectKey, keyPrefix, apiVersionOf } from './resources.ts';
import { alreadyExists, conflict, notFound, unavailable, timeout, ApiError, badRequest } from './status.ts';
import { canonical, prepareDaemonSetCreate, prepareDaemonSetUpdate } from './daemonset-strategy.ts';
import { carryDeletion, clearDeletion, deleteOnUpdate, finalizersOf, markDeleting } from './finalizers.ts';
import { matchFields } from './selectors.ts';

export function decode(kv: KV): any {
  const obj = JSON.parse(kv.value);
  obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(kv.modRevision) };
  return obj;
}

function encode(obj: any): string {
  const copy = { ...obj, metadata: { ...(obj.metadata ?? {}) } };
  delete copy.metadata.resourceVersion;
  return JSON.stringify(copy);
}

/** Maps etcd failures (no quorum, learner, unreachable) to the statuses kube-apiserver would return. */
export function etcdFailure(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof EtcdError && e.status === 504) return timeout(`etcdserver: request timed out`);
  return unavailable(msg.startsWith('etcdserver') ? msg : `etcdserver: ${msg}`);
}

const specOf = (o: any) => {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o ?? {};
  return canonical(rest);
};

const isDaemonSet = (info: ResourceInfo) => info.group === 'apps' && info.resource === 'daemonsets';
/** The kind as apierrors.NewInvalid names it: Kind.group (Kind alone in the core group). */
const qualifiedKind = (info: ResourceInfo) => (info.group ? `${info.kind}.${info.group}` : info.kind);

export class ObjectStore {
  constructor(readonly etcd: EtcdClient) {}

  private async wrap<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw etcdFailure(e);
    }
  }

  async get(info: ResourceInfo, ns: string | undefined, name: string): Promise<any> {
    const kv = await this.wrap(() => this.etcd.get(objectKey(info, ns, name)));
    if (!kv) throw notFound(info.group, info.resource, name);
    return this.present(info, decode(kv));
  }

  async tryGet(info: ResourceInfo, ns: string | undefined, name: string): Promise<any | undefined> {
    const kv = await this.wrap(() => this.etcd.get(objectKey(info, ns, name)));
    return kv ? this.present(info, decode(kv)) : undefined;
  }

  /**
   * Objects of a resource (in one namespace, or all) and the revision the list was read at; with
   * `fieldSelector` as the API takes it (`spec.nodeName=<node>`), only the objects it selects.
   */
  async list(info: ResourceInfo, ns?: string, opts: { fieldSelector?: string } = {}): Promise<{ items: any[]; revision: number }> {
    const prefix = info.namespaced && ns ? `${keyPrefix(info)}${ns}/` : keyPrefix(info);
    const r = await this.wrap(() => this.etcd.list(prefix));
    const items = r.kvs.map((kv) => this.present(info, decode(kv)));
    return { items: opts.fieldSelector ? items.filter((o) => matchFields(opts.fieldSelector!, o)) : items, revision: r.revision };
  }

  /** Objects of other versions keep their stored apiVersion; the twin serves them as the version asked for. */
  present(info: ResourceInfo, obj: any): any {
    obj.apiVersion = apiVersionOf(info);
    obj.kind = info.kind;
    return obj;
  }

  async create(info: ResourceInfo, ns: string | undefined, obj: any): Promise<any> {
    const meta = (obj.metadata ??= {});
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomUUID().slice(0, 5);
    if (!meta.name) throw new ApiError(422, 'Invalid', `${info.kind} "" is invalid: metadata.name: Required value: name or generateName is required`);
    if (info.namespaced) meta.namespace = ns;
    else delete meta.namespace;
    meta.uid = randomUUID();
    meta.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.managedFields;
    clearDeletion(meta);
    if (isDaemonSet(info)) prepareDaemonSetCreate(obj);
    this.present(info, obj);
    const key = objectKey(info, ns, meta.name);
    const r = await this.wrap(() => this.etcd.putIf(key, encode(obj), 0));
    if (!r.ok) throw alreadyExists(info.group, info.resource, meta.name);
    meta.resourceVersion = String(r.revision);
    return obj;
  }

  /**
   * Replaces an object. With `expectedRV` the write happens only if nobody wrote since; otherwise it
   * is applied on top of the current revision. `keepStatus` ignores status changes (status subresource).
   */
  async update(
    info: ResourceInfo,
    ns: string | undefined,
    name: string,
    obj: any,
    opts: { expectedRV?: string; keepStatus?: boolean; onlyStatus?: boolean } = {},
  ): Promise<any> {
    const key = objectKey(info, ns, name);
    const kv = await this.wrap(() => this.etcd.get(key));
    if (!kv) throw notFound(info.group, info.resource, name);
    const old = decode(kv);
    if (opts.expectedRV && opts.expectedRV !== String(kv.modRevision)) throw conflict(info.group, info.resource, name);
    if (obj?.metadata?.name && obj.metadata.name !== name)
      throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
    let next: any;
    if (opts.onlyStatus) next = { ...old, status: obj.status };
    else {
      next = { ...obj, metadata: { ...(obj.metadata ?? {}) } };
      if (opts.keepStatus) next.status = old.status;
    }
    const m = next.metadata;
    m.name = name;
    if (info.namespaced) m.namespace = ns;
    m.uid = old.metadata.uid;
    m.creationTimestamp = old.metadata.creationTimestamp;
    m.generation = (old.metadata.generation ?? 1) + (specOf(next) !== specOf(old) ? 1 : 0);
    delete m.managedFields;
    carryDeletion(next, old, qualifiedKind(info), name);
    if (isDaemonSet(info) && !opts.onlyStatus) prepareDaemonSetUpdate(next, old);
    this.present(info, next);
    // The write that takes a marked object's last finalizer off deletes it.
    const r = deleteOnUpdate(next)
      ? await this.wrap(() => this.etcd.deleteIf(key, kv.modRevision))
      : await this.wrap(() => this.etcd.putIf(key, encode(next), kv.modRevision));
    if (!r.ok) throw conflict(info.group, info.resource, name);
    m.resourceVersion = String(r.revision);
    return next;
  }

  /**
   * Deletes an object, or, while it has finalizers, only marks it (deletionTimestamp): it stays until an
   * update removes the last one. Returns the object as it was deleted, or marked (see pendingDeletion).
   */
  async delete(info: ResourceInfo, ns: string | undefined, name: string): Promise<any> {
    const key = objectKey(info, ns, name);
    const kv = await this.wrap(() => this.etcd.get(key));
    if (!kv) throw notFound(info.group, info.resource, name);
    const old = decode(kv);
    if (finalizersOf(old).length) {
      if (old.metadata.deletionTimestamp) return this.present(info, old);
      const marked = markDeleting(old);
      const w = await this.wrap(() => this.etcd.putIf(key, encode(marked), kv.modRevision));
      if (!w.ok) throw conflict(info.group, info.resource, name);
      marked.metadata.resourceVersion = String(w.revision);
      return this.present(info, marked);
    }
    const r = await this.wrap(() => this.etcd.deleteIf(key, kv.modRevision));
    if (!r.ok) throw conflict(info.group, info.resource, name);
    return this.present(info, old);
  }
}
