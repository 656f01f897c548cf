// `k3s agent`: validates the server's CA against the token like a joining server does, fetches the
// node's kubelet certificates from the supervisor (client: for the API; serving: for its own :10250),
// keeps its Node registered and its status current through the server's supervisor port, and runs this
// node's kubelet: the DaemonSet pods the servers' controller binds to this node (the Cilium agent), read and
// written through the server's API with the node's client certificate (an agent has no etcd). Every request
// goes through the agent's client load balancer (agent-lb.ts): the `--server` URL first, then, once the
// supervisor has listed them, the servers' own addresses. Containerd and the CNI datapath are not imitated;
// the Ready condition follows the same CNI config hook as servers.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_PASSWORD_FILE, nodePassword, passwordRejected } from './server/node-password.ts';
import { type Settings, list, str } from './config.ts';
import { log } from './log.ts';
import { notifyReady } from './notify.ts';
import { fetchJSON, fetchText } from './server/fetch.ts';
import { nodeIP, nodeName } from './server/netinfo.ts';
import { cniReady, machineIdentity } from './server/node.ts';
import { hashCA, parseToken } from './token.ts';
import { K3S_COMMIT, K3S_VERSION } from './version.ts';
import { ApiStore } from './api/client-store.ts';
import { AgentLoadBalancer, urlAddress } from './agent-lb.ts';
import { DaemonSetKubelet } from './addons/daemonsets.ts';
import type { NodeContext } from './addons/context.ts';
import { PodLogs } from './addons/pod-logs.ts';
import { ciliumAgentProgram } from './addons/cilium/program.ts';
import { kubeVipProgram } from './addons/kube-vip/program.ts';
import { hostNet } from './addons/kube-vip/net.ts';
import { startKubeletServer } from './kubelet-server.ts';
import { registryReachable, startNodeImages } from './runtime/images.ts';
import { serviceRange } from './service-network.ts';

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
  // K3S_TWIN_ADDON_ROOT (tests on one machine): the CNI config and pod logs under that folder.
  const root = process.env.K3S_TWIN_ADDON_ROOT;
  const cniDir = root ? join(root, 'etc/cni/net.d') : '/etc/cni/net.d';
  const cniDirs = [cniDir, join(dataDir, 'agent', 'etc', 'cni', 'net.d')];
  // The load balancer starts before anything dials (k3s pkg/agent/proxy SetupProxy), the --server URL its
  // default server.
  const lb = new AgentLoadBalancer(urlAddress(server), log);
  const via = <T>(path: string, call: (url: string) => Promise<T>) => lb.dial((base) => call(`${base}${path}`));
  // containerd starts, and k3s imports agent/images, before the agent dials its server.
  const images = startNodeImages(dataDir, registryReachable(root));
  let ca: string;
  for (;;) {
    try {
      const r = await via('/cacerts', (u) => fetchText(u));
      if (r.status !== 200) throw new Error(`${server}/cacerts: ${r.status}`);
      if (t.caHash && t.caHash !== hashCA(r.text))
        throw new Error(`token CA hash does not match the Cluster CA certificate hash: ${t.caHash} != ${hashCA(r.text)}`);
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
  let control: any;
  for (;;) {
    try {
      control = await via('/v1-k3s/config', (u) => fetchJSON(u, { ca, auth: { user: t.username || 'node', password: t.password } }));
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
  const agentDir = join(dataDir, 'agent');
  const certs = await nodeCertificates(via, t.password, ca, agentDir, name, password, ip);
  // k3s pkg/agent/tunnel/tunnel.go Setup: the apiserver addresses from the supervisor, then the load
  // balancer dials those (its --server only as the fallback). The twin asks again at every heartbeat where
  // k3s watches the `kubernetes` Endpoints.
  const apiServers = () => via('/v1-k3s/apiservers', (u) => fetchJSON(u, { ca, auth: { user: 'node', password: t.password } })) as Promise<string[]>;
  log.info('Getting list of apiserver endpoints from server');
  try {
    const addresses = await apiServers();
    log.info(`Got apiserver addresses from supervisor: [${addresses.join(' ')}]`);
    if (addresses.length) lb.update(addresses);
  } catch (e) {
    log.info(`Failed to retrieve list of apiservers from server: ${(e as Error).message}`);
  }
  // The kubelet listens on every address (its default); K3S_TWIN_KUBELET_ADDRESS (tests on one machine) narrows it.
  const kubeletAddress = process.env.K3S_TWIN_KUBELET_ADDRESS;
  await startKubeletServer(certs.serving, certs.clientCA, 10250, root ? join(root, 'var/log/pods') : '/var/log/pods', kubeletAddress).catch((e) =>
    log.fatal(
      `listen tcp ${kubeletAddress ?? ''}:10250: bind: ${(e as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'address already in use' : (e as Error).message}`,
    ),
  );
  const ctx: NodeContext = {
    node: name,
    ip,
    dataDir,
    cniDir,
    root,
    caFile: join(agentDir, 'server-ca.crt'),
    // An agent has no service-cidr of its own: it takes the server's (pkg/agent/config/config.go get:
    // AgentConfig.ServiceCIDR = controlConfig.ServiceIPRange).
    serviceCidr: serviceRange(control?.criticalArgs?.['service-cidr']),
    store: new ApiStore(lb, { ca, ...certs.client }),
    images,
  };
  const kubelet = new DaemonSetKubelet(ctx, new PodLogs(undefined, root ? join(root, 'var/log/pods') : undefined), [
    kubeVipProgram(hostNet),
    ciliumAgentProgram(),
  ]);
  let ready = false;
  for (;;) {
    try {
      await via('/v1-k3s/node', (u) =>
        fetchJSON(u, {
          ca,
          auth: { user: 'node', password: t.password },
          body: { name, ip, password, cniReady: cniReady(cniDirs), labels, ...machineIdentity() },
        }),
      );
      if (!ready) {
        ready = true;
        kubelet.start();
        notifyReady('k3s agent is up and running');
        log.info('k3s agent is up and running');
      }
    } catch (e) {
      const msg = (e as Error).message;
      // A 403 from the supervisor (pkg/agent/config/config.go getNodeNamedCrt, wrapped with the cert's path in get()).
      if (/\/v1-k3s\/node: 403 /.test(msg))
        log.info(`Waiting to retrieve agent configuration; server is not ready: ${join(dataDir, 'agent', 'serving-kubelet.crt')}: ${passwordRejected()}`);
      else log.error(`Failed to update node ${name}: ${msg}`);
    }
    await apiServers().then(
      (a) => a.length && lb.update(a),
      () => undefined,
    );
    await sleep(Number(process.env.K3S_TWIN_HEARTBEAT_MS ?? 10_000));
  }
}

interface Pair {
  cert: string;
  key: string;
}

function splitPem(text: string): Pair {
  const blocks = text.match(/-----BEGIN [^-]+-----[\s\S]*?-----END [^-]+-----\n?/g) ?? [];
  const isKey = (b: string) => /PRIVATE KEY/.test(b);
  return { cert: blocks.filter((b) => !isKey(b)).join(''), key: blocks.filter(isKey).join('') };
}

/**
 * The agent's certificates from the supervisor (k3s pkg/agent/config getNodeNamedCrt): the kubelet's client
 * and serving certificates (node name, password and IP in k3s-Node-* headers) and the client CA, kept in
 * <data-dir>/agent as k3s does. A 403 is the node password check; k3s words it as below and retries.
 */
type Via = <T>(path: string, call: (url: string) => Promise<T>) => Promise<T>;

async function nodeCertificates(
  via: Via,
  secret: string,
  ca: string,
  dir: string,
  name: string,
  password: string,
  ip: string,
): Promise<{ client: Pair; serving: Pair; clientCA: string }> {
  const auth = { user: 'node', password: secret };
  const headers = { 'k3s-Node-Name': name, 'k3s-Node-Password': password, 'k3s-Node-IP': ip };
  for (;;) {
    try {
      // Errors name the file the answer was for, as k3s does (`…/agent/serving-kubelet.crt: Node password rejected, …`).
      const get = async (path: string, file: string, named: boolean) => {
        const r = await via(path, (u) => fetchText(u, { ca, auth, headers: named ? headers : undefined }));
        if (r.status === 403 && named) throw new Error(`${join(dir, file)}: ${passwordRejected()}`);
        if (r.status !== 200) throw new Error(`${join(dir, file)}: ${r.status} ${r.text.trim()}`);
        return r.text;
      };
      const serving = splitPem(await get('/v1-k3s/serving-kubelet.crt', 'serving-kubelet.crt', true));
      const client = splitPem(await get('/v1-k3s/client-kubelet.crt', 'client-kubelet.crt', true));
      const clientCA = await get('/v1-k3s/client-ca.crt', 'client-ca.crt', false);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const files: Record<string, string> = {
        'server-ca.crt': ca,
        'client-ca.crt': clientCA,
        'client-kubelet.crt': client.cert,
        'client-kubelet.key': client.key,
        'serving-kubelet.crt': serving.cert,
        'serving-kubelet.key': serving.key,
      };
      for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text, { mode: f.endsWith('.key') ? 0o600 : 0o644 });
      return { client, serving, clientCA };
    } catch (e) {
      log.info(`Waiting to retrieve agent configuration; server is not ready: ${(e as Error).message}`);
      await sleep(5000);
    }
  }
}
