// Node passwords (k3s pkg/nodepassword): a node keeps a random password in /etc/rancher/node/password; the
// cluster stores its hash in the Secret kube-system/<node>.node-password.k3s on first registration and
// rejects a later registration of the same name with another password (a rebuilt host). Deleting the
// Node deletes the Secret.
import { createHash } from 'node:crypto';
import { BUILTIN } from '../api/resources.ts';
import type { ObjectStore } from '../api/store.ts';

const SECRETS = BUILTIN.find((x) => x.resource === 'secrets')!;
export const PASSWORD_REJECTED = "Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag";

export class NodePasswordRejected extends Error {
  readonly status = 403;
  constructor() {
    super(PASSWORD_REJECTED);
  }
}

const secretName = (node: string) => `${node}.node-password.k3s`;
const hash = (p: string) => createHash('sha256').update(p).digest('hex');

export async function verifyNodePassword(store: ObjectStore, node: string, password: string): Promise<void> {
  const cur = await store.tryGet(SECRETS, 'kube-system', secretName(node));
  const want = Buffer.from(hash(password)).toString('base64');
  if (!cur) {
    await store.create(SECRETS, 'kube-system', { apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName(node), namespace: 'kube-system' }, type: 'k3s.cattle.io/node-password', data: { hash: want } });
    return;
  }
  if (cur.data?.hash !== want) throw new NodePasswordRejected();
}

export async function deleteNodePassword(store: ObjectStore, node: string): Promise<void> {
  await store.delete(SECRETS, 'kube-system', secretName(node)).catch(() => undefined);
}
