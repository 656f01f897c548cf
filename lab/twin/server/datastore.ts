// Datastore checks shared by normal starts and cluster resets.
import type { EtcdClient } from '../etcd/client.ts';
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

/** The bootstrap data is bound to the token: another token against existing data is refused. */
export async function checkBootstrapToken(etcd: EtcdClient, secret: string): Promise<void> {
  const want = JSON.stringify({ token: secretHash(secret) });
  const cur = await etcd.get(BOOTSTRAP_KEY);
  if (!cur) await etcd.putIf(BOOTSTRAP_KEY, want, 0);
  else if (cur.value !== want) prepFail('bootstrap data already found and encrypted with different token');
}

