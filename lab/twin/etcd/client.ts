// A small client for etcd's JSON gRPC gateway (etcd 3.4: POST /v3/kv/range, /v3/kv/txn, /v3/watch,
// /v3/cluster/member/*). It needs no npm etcd client; bytes travel base64-encoded, int64 as strings.
import http from 'node:http';

export interface KV {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

export interface Member {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export class EtcdError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly grpcCode?: number,
  ) {
    super(message);
  }
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString('utf8') : '');

/** The key range covering every key with this prefix. */

function rangeEnd(prefix: string): string {
  const buf = Buffer.from(prefix, 'utf8');
  for (let i = buf.length - 1; i >= 0; i--) {
    if (buf[i] < 0xff) {
      const out = Buffer.from(buf.subarray(0, i + 1));
      out[i]++;
      return out.toString('base64');
    }
  }
  return Buffer.from([0]).toString('base64');
}

function toKV(raw: any): KV {
  return {
    key: unb64(raw.key),
    value: unb64(raw.value),
    createRevision: Number(raw.create_revision ?? 0),
    modRevision: Number(raw.mod_revision ?? 0),
  };
}

export interface WatchEvent {
  type: 'PUT' | 'DELETE';
  kv: KV;
  prev?: KV;
}

export class EtcdClient {
  constructor(
    readonly endpoint: string,
    readonly timeoutMs = 8000,
  ) {}

  async call(path: string, body: unknown, timeoutMs = this.timeoutMs): Promise<any> {
    const url = new URL(path, this.endpoint);
    const data = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = text ? JSON.parse(text) : {};
          } catch {
            json = { error: text };
          }
          if ((res.statusCode ?? 500) >= 300) reject(new EtcdError(json.message ?? json.error ?? text, res.statusCode ?? 500, json.code));
          else resolve(json);
        });
      });
      req.setTimeout(timeoutMs, () => req.destroy(new EtcdError('context deadline exceeded', 504)));
      req.on('error', (e) => reject(e instanceof EtcdError ? e : new EtcdError(e.message, 503)));
      req.end(data);
    });
  }

  async get(key: string): Promise<KV | undefined> {
    const r = await this.call('/v3/kv/range', { key: b64(key) });
    return r.kvs?.length ? toKV(r.kvs[0]) : undefined;
  }

  async list(prefix: string, opts: { serializable?: boolean } = {}): Promise<{ kvs: KV[]; revision: number }> {
    const r = await this.call('/v3/kv/range', { key: b64(prefix), range_end: rangeEnd(prefix), serializable: opts.serializable ?? false });
    return { kvs: (r.kvs ?? []).map(toKV), revision: Number(r.header?.revision ?? 0) };
  }

  async put(key: string, value: string): Promise<number> {
    const r = await this.call('/v3/kv/put', { key: b64(key), value: b64(value) });
    return Number(r.header?.revision ?? 0);
  }

  /** Writes only if the key's mod revision is still `modRevision` (0 = the key must not exist). */
  async putIf(key: string, value: string, modRevision: number): Promise<{ ok: boolean; revision: number }> {
    const compare =
      modRevision === 0
        ? [{ target: 'CREATE', key: b64(key), create_revision: '0', result: 'EQUAL' }]
        : [{ target: 'MOD', key: b64(key), mod_revision: String(modRevision), result: 'EQUAL' }];
    const r = await this.call('/v3/kv/txn', { compare, success: [{ request_put: { key: b64(key), value: b64(value) } }] });
    return { ok: Boolean(r.succeeded), revision: Number(r.header?.revision ?? 0) };
  }

  async deleteIf(key: string, modRevision: number): Promise<{ ok: boolean; revision: number }> {
    const r = await this.call('/v3/kv/txn', {
      compare: [{ target: 'MOD', key: b64(key), mod_revision: String(modRevision), result: 'EQUAL' }],
      success: [{ request_delete_range: { key: b64(key) } }],
    });
    return { ok: Boolean(r.succeeded), revision: Number(r.header?.revision ?? 0) };
  }

  async delete(key: string): Promise<number> {
    const r = await this.call('/v3/kv/deleterange', { key: b64(key) });
    return Number(r.header?.revision ?? 0);
  }

  async deletePrefix(prefix: string): Promise<void> {
    await this.call('/v3/kv/deleterange', { key: b64(prefix), range_end: rangeEnd(prefix) });
  }

  async members(timeoutMs = this.timeoutMs): Promise<Member[]> {
    const r = await this.call('/v3/cluster/member/list', {}, timeoutMs);
    return (r.members ?? []).map((m: any) => ({
      id: String(m.ID),
      name: m.name ?? '',
      peerURLs: m.peerURLs ?? [],
      clientURLs: m.clientURLs ?? [],
      isLearner: Boolean(m.isLearner),
    }));
  }

  async addLearner(peerURL: string): Promise<Member> {
    const r = await this.call('/v3/cluster/member/add', { peerURLs: [peerURL], isLearner: true });
    const m = r.member;
    return { id: String(m.ID), name: m.name ?? '', peerURLs: m.peerURLs ?? [], clientURLs: [], isLearner: true };
  }

  async promote(id: string): Promise<void> {
    await this.call('/v3/cluster/member/promote', { ID: id });
  }

  async removeMember(id: string): Promise<void> {
    await this.call('/v3/cluster/member/remove', { ID: id });
  }

  async status(): Promise<{ memberId: string; leader: string; isLearner: boolean }> {
    const r = await this.call('/v3/maintenance/status', {}, 3000);
    return { memberId: String(r.header?.member_id ?? ''), leader: String(r.leader ?? ''), isLearner: Boolean(r.isLearner) };
  }

  /**
   * Watches a prefix from `startRevision`; calls onEvent per change. Resolves a stop function.
   * onError gets `compacted` when the start revision is gone (the API turns that into 410 Gone).
   */
  watch(prefix: string, startRevision: number, onEvent: (e: WatchEvent) => void, onError: (why: string) => void): () => void {
    const url = new URL('/v3/watch', this.endpoint);
    const body = JSON.stringify({ create_request: { key: b64(prefix), range_end: rangeEnd(prefix), start_revision: String(startRevision), prev_kv: true } });
    let buf = '';
    let stopped = false;
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        // The gateway streams one JSON object per line.
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          let msg: any;
          try {
            msg = JSON.parse(line);
          } catch {
            continue;
          }
          const result = msg.result ?? {};
          if (msg.error) onError(msg.error.message ?? 'watch error');
          if (result.compact_revision && Number(result.compact_revision) > 0) {
            onError('compacted');
            continue;
          }
          for (const ev of result.events ?? []) {
            onEvent({ type: ev.type === 'DELETE' ? 'DELETE' : 'PUT', kv: toKV(ev.kv), prev: ev.prev_kv ? toKV(ev.prev_kv) : undefined });
          }
        }
      });
      res.on('end', () => {
        if (!stopped) onError('watch closed');
      });
      res.on('error', () => {
        if (!stopped) onError('watch closed');
      });
    });
    req.on('error', (e) => {
      if (!stopped) onError(e.message);
    });
    req.end(body);
    return () => {
      stopped = true;
      req.destroy();
    };
  }
}
