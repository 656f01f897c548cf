// `k3s agent`: validates the server's CA against the token like a joining server does, then keeps its
// Node registered and its status current through the server's supervisor port. The kubelet, containerd
// and the CNI datapath are not imitated; the Ready condition follows the same CNI config hook as servers.
import { join } from 'node:path';
import { NODE_PASSWORD_FILE, nodePassword, passwordRejected } from './server/node-password.ts';
import { type Settings, list, str } from './config.ts';
import { log } from './log.ts';
import { notifyReady } from './notify.ts';
import { fetchJSON, fetchText } from './server/fetch.ts';
import { nodeIP, nodeName } from './server/netinfo.ts';
import { cniReady } from './server/node.ts';
import { hashCA, parseToken } from './token.ts';
import { K3S_COMMIT, K3S_VERSION } from './version.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runAgent(s: Settings): Promise<void> {
  log.info(`Starting k3s agent ${K3S_VERSION} (${K3S_COMMIT})`);
  const server = str(s, 'server').replace(/\/+$/, '');
  const token = str(s, 'token');
  if (!server) log.fatal('Error: --server is required');
  if (!token) log.fatal('Error: --token is required');
  let t: ReturnType<typeof parseToken>;
  try {
    t = parseToken(token);
  } catch (e) {
    // k3s-io/k3s v1.33.5+k3s1 pkg/agent/config/config.go Get: a malformed token fails every retry alike.
    for (;;) {
      log.info(`Waiting to retrieve agent configuration; server is not ready: ${(e as Error).message}`);
      await sleep(5000);
    }
  }
  const dataDir = str(s, 'data-dir', '/var/lib/rancher/k3s');
  const cniDirs = ['/etc/cni/net.d', join(dataDir, 'agent', 'etc', 'cni', 'net.d')];
  let ca: string;
  for (;;) {
    try {
      const r = await fetchText(`${server}/cacerts`);
      if (r.status !== 200) throw new Error(`${server}/cacerts: ${r.status}`);
      if (t.caHash && t.caHash !== hashCA(r.text)) throw new Error(`token CA hash does not match the Cluster CA certificate hash: ${t.caHash} != ${hashCA(r.text)}`);
      ca = r.text;
      break;
    } catch (e) {
      const msg = (e as Error).message;
      log.error(`Failed to validate connection to cluster at ${server}: ${msg.startsWith('token') ? msg : `failed to get CA certs: ${msg}`}`);
      await sleep(2000);
    }
  }
  // k3s-io/k3s v1.33.5+k3s1 pkg/agent/config/config.go Get/get: the control config, with the token's
  // credentials, retried every 5 s (jittered up to 10 s) at info level; a wrong password never clears.
  for (;;) {
    try {
      await fetchJSON(`${server}/v1-k3s/config`, { ca, auth: { user: t.username || 'node', password: t.password } });
      break;
    } catch (e) {
      log.info(`Waiting to retrieve agent configuration; server is not ready: failed to retrieve configuration from server: ${(e as Error).message}`);
      await sleep(5000 + Math.floor(Math.random() * 5000));
    }
  }
  const name = nodeName(s);
  const ip = nodeIP(s);
  const password = nodePassword(process.env.K3S_TWIN_NODE_PASSWORD_FILE ?? NODE_PASSWORD_FILE);
  const labels = Object.fromEntries(list(s, 'node-label').map((l) => l.split('=') as [string, string]));
  let ready = false;
  for (;;) {
    try {
      await fetchJSON(`${server}/v1-k3s/node`, { ca, auth: { user: 'node', password: t.password }, body: { name, ip, password, cniReady: cniReady(cniDirs), labels } });
      if (!ready) {
        ready = true;
        notifyReady('k3s agent is up and running');
        log.info('k3s agent is up and running');
      }
    } catch (e) {
      const msg = (e as Error).message;
      // A 403 from the supervisor (pkg/agent/config/config.go getNodeNamedCrt, wrapped with the cert's path in get()).
      if (/\/v1-k3s\/node: 403 /.test(msg)) log.info(`Waiting to retrieve agent configuration; server is not ready: ${join(dataDir, 'agent', 'serving-kubelet.crt')}: ${passwordRejected()}`);
      else log.error(`Failed to update node ${name}: ${msg}`);
    }
    await sleep(Number(process.env.K3S_TWIN_HEARTBEAT_MS ?? 10_000));
  }
}
