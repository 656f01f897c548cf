// An in-memory stand-in for the twin's EtcdClient (get, list, put, putIf, deleteIf, delete): revisions
// and compare-and-swap as etcd keeps them, so the twin's ObjectStore runs in a unit test without etcd.
import type { EtcdClient, KV } from '../../lab/twin/etcd/client.ts';

export function memoryEtcd(): EtcdClient {
  const kvs = new Map<string, KV>();
  let revision = 1;
  const write = (key: string, value: string) => {
    revision += 1;
    kvs.set(key, { key, value, createRevision: kvs.get(key)?.createRevision ?? revision, modRevision: revision });
    return revision;
  };
  const fake = {
    async get(key: string) {
      return kvs.get(key);
    },
    async list(prefix: string) {
      return { kvs: [...kvs.values()].filter((kv) => kv.key.startsWith(prefix)).sort((a, b) => a.key.localeCompare(b.key)), revision };
    },
    async put(key: string, value: string) {
      return write(key, value);
    },
    async putIf(key: string, value: string, modRevision: number) {
      if ((kvs.get(key)?.modRevision ?? 0) !== modRevision) return { ok: false, revision };
      return { ok: true, revision: write(key, value) };
    },
    async deleteIf(key: string, modRevision: number) {
      if ((kvs.get(key)?.modRevision ?? 0) !== modRevision) return { ok: false, revision };
      kvs.delete(key);
      revision += 1;
      return { ok: true, revision };
    },
    async delete(key: string) {
      kvs.delete(key);
      return ++revision;
    },
    async deletePrefix(prefix: string) {
      for (const k of [...kvs.keys()]) if (k.startsWith(prefix)) kvs.delete(k);
    },
  };
  return fake as unknown as EtcdClient;
}
