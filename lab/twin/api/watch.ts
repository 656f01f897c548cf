// Watches (?watch=true): a stream of {"type","object"} lines fed by an etcd watch on the resource's prefix.
// Without a resourceVersion (or "0") the current objects come first as ADDED, as kube-apiserver does.
// A start revision etcd has compacted away ends the stream with a 410 Gone ERROR event.
import type { ServerResponse, IncomingMessage } from 'node:http';
import type { EtcdClient } from '../etcd/client.ts';
import { decode, type ObjectStore } from './store.ts';
import { keyPrefix, type ResourceInfo } from './resources.ts';
import { matchFields, matchLabels, parseLabelSelector } from './selectors.ts';

export interface WatchQuery {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  timeoutSeconds?: number;
}

export async function serveWatch(
  req: IncomingMessage,
  res: ServerResponse,
  etcd: EtcdClient,
  store: ObjectStore,
  info: ResourceInfo,
  ns: string | undefined,
  q: WatchQuery,
): Promise<void> {
  const labels = q.labelSelector ? parseLabelSelector(q.labelSelector) : [];
  const matches = (o: any) => matchLabels(labels, o?.metadata?.labels) && (!q.fieldSelector || matchFields(q.fieldSelector, o));
  let start: number;
  const initial: any[] = [];
  if (!q.resourceVersion || q.resourceVersion === '0') {
    const list = await store.list(info, ns);
    initial.push(...list.items.filter(matches));
    start = list.revision + 1;
  } else start = Number(q.resourceVersion) + 1;

  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  // Headers go out at once, as kube-apiserver's watch does: a client (kubectl rollout status) waits for
  // them before it reads events, and a quiet watch would otherwise hang it until the timeout.
  res.flushHeaders();
  const send = (type: string, object: unknown) => res.write(JSON.stringify({ type, object }) + '\n');
  for (const o of initial) send('ADDED', o);

  const prefix = info.namespaced && ns ? `${keyPrefix(info)}${ns}/` : keyPrefix(info);
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    stop();
    clearTimeout(timer);
    res.end();
  };
  const stop = etcd.watch(
    prefix,
    start,
    (ev) => {
      if (ev.type === 'DELETE') {
        if (!ev.prev) return;
        const obj = store.present(info, decode(ev.prev));
        obj.metadata.resourceVersion = String(ev.kv.modRevision);
        if (matches(obj)) send('DELETED', obj);
        return;
      }
      const obj = store.present(info, decode(ev.kv));
      if (matches(obj)) send(ev.kv.createRevision === ev.kv.modRevision ? 'ADDED' : 'MODIFIED', obj);
      else if (ev.prev && matches(store.present(info, decode(ev.prev)))) send('DELETED', obj);
    },
    (why) => {
      if (why === 'compacted') {
        send('ERROR', {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${q.resourceVersion}`,
          reason: 'Expired',
          code: 410,
        });
      }
      finish();
    },
  );
  const timer = setTimeout(finish, (q.timeoutSeconds ?? 1800) * 1000);
  req.on('close', finish);
  res.on('close', finish);
}
