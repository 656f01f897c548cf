// Node passwords, as k3s checks them when a node asks its supervisor for kubelet certificates
// (k3s-io/k3s pkg/nodepassword/nodepassword.go Ensure, pkg/nodepassword/validate.go GetNodeAuthValidator;
// the agent side in pkg/agent/config/config.go ensureNodePassword and getNodeNamedCrt):
// - a node keeps a random password in /etc/rancher/node/password (made once, hex, 0600);
// - the cluster keeps its hash in the Secret kube-system/<node>.node-password.k3s, created on the first
//   request (immutable); a later request of the same name with another password is refused with 403
//   "unable to verify password for node <node>: hash does not match", which the agent reports as
//   "Node password rejected, …" and retries every 5 s;
// - a server's own agent asks its OWN supervisor (https://127.0.0.1:<port>) while its apiserver is not up
//   yet: k3s then verifies the password locally against the file ("Password verified locally for node …",
//   k3s #3435, the fix for a restore on a fresh node) and checks the Secret later, only as information:
//   a Warning Event NodePasswordValidationFailed on the Node, never a refusal;
// - deleting the Node deletes the Secret.
// The hash is sha256 here (k3s: scrypt); what the engine sees (the Secret's name, its data key, the words
// logged) is the same.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { BUILTIN } from '../api/resources.ts';
import type { ObjectStore } from '../api/store.ts';
import { log } from '../log.ts';

const SECRETS = BUILTIN.find((x) => x.resource === 'secrets')!;
const EVENTS = BUILTIN.find((x) => x.resource === 'events' && !x.group)!;
export const NODE_PASSWORD_FILE = '/etc/rancher/node/password';
/** The agent's words for a 403 from the supervisor (pkg/agent/config/config.go getNodeNamedCrt). */
export const passwordRejected = (file = NODE_PASSWORD_FILE) =>
  `Node password rejected, duplicate hostname or contents of '${file}' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag`;

/** The server's error (pkg/nodepassword passwordError; the scrypt hasher's "hash does not match"). */
export class NodePasswordRejected extends Error {
  readonly status = 403;
  constructor(node: string) {
    super(`unable to verify password for node ${node}: hash does not match`);
  }
}

const secretName = (node: string) => `${node.toLowerCase()}.node-password.k3s`;
const hash = (p: string) => createHash('sha256').update(p).digest('hex');

/** The node's password, made once (pkg/agent/config ensureNodePassword). */
export function nodePassword(file = process.env.K3S_TWIN_NODE_PASSWORD_FILE ?? NODE_PASSWORD_FILE): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const p = randomBytes(16).toString('hex');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${p}\n`, { mode: 0o600 });
  return p;
}

/** Ensure: verify against the Secret if it exists, else create it. Throws NodePasswordRejected on a mismatch. */
export async function verifyNodePassword(store: ObjectStore, node: string, password: string): Promise<void> {
  const cur = await store.tryGet(SECRETS, 'kube-system', secretName(node));
  const want = Buffer.from(hash(password)).toString('base64');
  if (!cur) {
    await store.create(SECRETS, 'kube-system', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName(node), namespace: 'kube-system' },
      immutable: true,
      type: 'k3s.cattle.io/node-password',
      data: { hash: want },
    });
    return;
  }
  if (cur.data?.hash !== want) throw new NodePasswordRejected(node);
}

/**
 * A server's own node (validate.go verifyLocalPassword + ensureSecret): verified against its own file, then
 * the Secret is ensured once the datastore answers; a mismatch is only a Warning Event on the Node.
 */
export async function verifyLocalPassword(store: ObjectStore, node: string, password: string): Promise<void> {
  log.info(`Password verified locally for node ${node}`);
  let reason = 'NodePasswordValidationComplete';
  let message = 'Deferred node password secret validation complete';
  let type = 'Normal';
  try {
    await verifyNodePassword(store, node, password);
  } catch (e) {
    if (!(e instanceof NodePasswordRejected)) throw e;
    [reason, message, type] = ['NodePasswordValidationFailed', `Deferred node password secret validation failed: ${e.message}`, 'Warning'];
  }
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await store
    .create(EVENTS, 'default', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${node}.${Date.now().toString(16)}`, namespace: 'default' },
      involvedObject: { kind: 'Node', name: node, uid: node },
      reason,
      message,
      type,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    })
    .catch(() => undefined);
}

export async function deleteNodePassword(store: ObjectStore, node: string): Promise<void> {
  await store.delete(SECRETS, 'kube-system', secretName(node)).catch(() => undefined);
}
