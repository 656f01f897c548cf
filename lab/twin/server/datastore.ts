// Datastore checks shared by normal starts and cluster resets.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { EtcdClient, Member } from '../etcd/client.ts';
import { type CAMaterial, type TlsPaths, readCAs, writeCAs } from '../pki.ts';
import { log } from '../log.ts';
import { secretHash } from '../token.ts';
import { prepFail } from './bootstrap.ts';

const BOOTSTRAP_KEY = '/bootstrap/k3s-twin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until this member serves quorum reads: true for a voter of a cluster with quorum. */
export async function waitForQuorumRead(etcd: EtcdClient, joining: boolean): Promise<void> {
  let last = 0;
  for (;;) {
    try {
      await etcd.call('/v3/kv/range', { key: Buffer.from('/health').toString('base64') }, 3000);
      return;
    } catch (e) {
      if (Date.now() - last > 15_000) {
        last = Date.now();
        const msg = (e as Error).message;
        if (joining || /learner/.test(msg)) log.info('Waiting for this server to be promoted from learner to voting member of the etcd cluster');
        else log.info(`Waiting for etcd server to become available: ${msg}`);
      }
      await sleep(1000);
    }
  }
}

/** How long k3s's /db/info handler gives etcd's member list (pkg/etcd/etcd.go infoHandler: 2 s). */
const DB_INFO_TIMEOUT_MS = 2_000;

/**
 * etcd's member list as k3s's /db/info reads it: clientv3 MemberList asks a LINEARIZABLE list (etcd-io/etcd
 * v3.5.26 client/v3/cluster.go `Linearizable: true`; server/etcdserver/api/v3rpc/member.go waits for
 * LinearizableReadNotify first), so without quorum it fails when the handler's 2 s run out. The lab's etcd
 * is 3.4, whose member list is always served from the local member: a quorum read first stands in.
 */
export async function linearizableMembers(etcd: EtcdClient): Promise<Member[]> {
  const deadline = Date.now() + DB_INFO_TIMEOUT_MS;
  await etcd.call('/v3/kv/range', { key: Buffer.from('health').toString('base64') }, DB_INFO_TIMEOUT_MS);
  return etcd.members(Math.max(1, deadline - Date.now()));
}

/**
 * The bootstrap data (k3s pkg/cluster/bootstrap.go, storage.go): the cluster CAs, encrypted with a key
 * derived from the token, in the datastore. Another token cannot open it and is refused. A server that
 * holds the datastore but not the CAs on disk (a cluster-reset restore onto a reinstalled host) writes
 * them from the datastore ("Reconciling bootstrap data between datastore and disk").
 */
export async function checkBootstrapToken(etcd: EtcdClient, secret: string, tls?: TlsPaths): Promise<void> {
  const cur = await etcd.get(BOOTSTRAP_KEY);
  const have = tls && existsSync(tls.serverCA) ? readCAs(tls) : undefined;
  if (!cur) {
    await etcd.putIf(BOOTSTRAP_KEY, JSON.stringify({ token: secretHash(secret), ...(have && { data: seal(have, secret) }) }), 0);
    return;
  }
  const stored = JSON.parse(cur.value) as { token: string; data?: string };
  if (stored.token !== secretHash(secret)) prepFail('bootstrap data already found and encrypted with different token');
  if (!tls || have || !stored.data) return;
  log.info('Reconciling bootstrap data between datastore and disk');
  writeCAs(tls, open(stored.data, secret));
}

const keyOf = (secret: string) => createHash('sha256').update(`k3s-twin-bootstrap:${secret}`).digest();

function seal(m: CAMaterial, secret: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', keyOf(secret), iv);
  const body = Buffer.concat([c.update(JSON.stringify(m)), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64');
}

function open(sealed: string, secret: string): CAMaterial {
  const raw = Buffer.from(sealed, 'base64');
  const d = createDecipheriv('aes-256-gcm', keyOf(secret), raw.subarray(0, 12));
  d.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8'));
}
