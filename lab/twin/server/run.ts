// `k3s server`: bootstrap the datastore, serve :6443, then keep the cluster's bookkeeping going
// (base objects, kubeconfig, this Node, learner promotion, auto-deploy manifests) and report READY.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Settings, bool, list, str } from '../config.ts';
import { log } from '../log.ts';
import { notifyReady } from '../notify.ts';
import { ensureAdmin, issueServing, readCAs, servingSANs, signNodeCert, tlsPaths } from '../pki.ts';
import { K3S_COMMIT, K3S_VERSION } from '../version.ts';
import { KubeApi } from '../api/handler.ts';
import { BUILTIN, ResourceRegistry, keyPrefix } from '../api/resources.ts';
import { ObjectStore } from '../api/store.ts';
import { ApiError } from '../api/status.ts';
import { EtcdClient } from '../etcd/client.ts';
import { bootstrap, localEtcd, type Ctx } from './bootstrap.ts';
import { criticalArgs } from './critical.ts';
import { startHttps, unauthorized } from './https.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { ManifestDeployer } from './manifests.ts';
import { nodeIP, nodeName } from './netinfo.ts';
import { cniReady, desiredNode, etcdStatusCondition, machineIdentity, type MemberStatus, type NodeFacts, nodeReportDue, voterConditionDue } from './node.ts';
import { serverPaths } from './paths.ts';
import { handleSupervisor } from './supervisor.ts';
import { NODE_PASSWORD_FILE, NodePasswordRejected, deleteNodePassword, nodePassword, verifyLocalPassword, verifyNodePassword } from './node-password.ts';
import { baseObjects } from './base-objects.ts';
import { renewNodeLease } from './node-lease.ts';
import { clusterReset } from './reset.ts';
import { clusterDnsIP, kubernetesServiceIP, serviceRange } from '../service-network.ts';
import { checkBootstrapToken, linearizableMembers, waitForQuorumRead } from './datastore.ts';

const NODES = BUILTIN.find((x) => x.resource === 'nodes')!;

async function upsertNode(store: ObjectStore, f: NodeFacts): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const existing = await store.tryGet(NODES, undefined, f.name);
    const desired = desiredNode(f, existing);
    if (!nodeReportDue(existing, desired, Date.now())) return;
    try {
      if (existing) await store.update(NODES, undefined, f.name, desired, { expectedRV: existing.metadata.resourceVersion });
      else await store.create(NODES, undefined, desired);
      return;
    } catch (e) {
      if (!(e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'AlreadyExists'))) throw e;
    }
  }
}

/** What in-cluster components started next to the server (add-on twins) get once its API serves. */
export interface ServerContext {
  node: string;
  ip: string;
  store: ObjectStore;
  registry: ResourceRegistry;
  etcd: EtcdClient;
  /** k3s data dir (/var/lib/rancher/k3s). */
  dataDir: string;
  serviceCidr: string;
  /** Where a CNI writes its config; a file there makes this Node Ready. */
  cniDir: string;
}

export interface ServerOptions {
  /** Called once after READY=1, with the server's datastore and identity. */
  onStarted?: (ctx: ServerContext) => void | Promise<void>;
  /** Serves authenticated API paths an add-on owns (pods/<name>/log) before the API subset; true when it answered. */
  handleApi?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
}

export async function runServer(s: Settings, opts: ServerOptions = {}): Promise<void> {
  log.info(`Starting k3s ${K3S_VERSION} (${K3S_COMMIT})`);
  const p = serverPaths(s);
  const bind = str(s, 'bind-address');
  const c: Ctx = { s, p, ip: nodeIP(s), node: nodeName(s), listenLoopback: !bind || bind === '0.0.0.0' };
  const port = Number(str(s, 'https-listen-port', '6443'));
  // k3s-io/k3s pkg/cli/server/server.go: the service range, its first address (a SAN, the `kubernetes`
  // Service) and the default cluster DNS are settled before anything starts; a bad range stops k3s.
  const serviceCidr = serviceRange(str(s, 'service-cidr'));
  let kubernetesIP = '';
  try {
    kubernetesIP = kubernetesServiceIP(serviceCidr);
    if (!str(s, 'cluster-dns')) clusterDnsIP(serviceCidr);
  } catch (e) {
    log.fatal((e as Error).message);
  }
  if (bool(s, 'cluster-reset')) return clusterReset(c);

  const booted = await bootstrap(c);
  const tls = tlsPaths(p.dataDir);
  const etcd = localEtcd(c);
  let stopping = false;
  const shutdown = async (code: number) => {
    stopping = true;
    await booted.member.child.stop();
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));
  void booted.member.child.exited.then((code) => {
    if (stopping) return;
    if (booted.member.removed()) {
      // k3s leaves a tombstone so the next start moves the old data aside and rejoins.
      writeFileSync(p.tombstone, '');
      log.fatal('etcd member has been permanently removed from the cluster; restart to rejoin');
    }
    const why = booted.member.lastError() || `exit status ${code}`;
    if (booted.joining) log.fatal(`etcd cluster join failed: ${why}`);
    log.fatal(`etcd exited: ${why}`);
  });

  ensureAdmin(tls);
  const sans = servingSANs(list(s, 'tls-san'), [c.ip, ...list(s, 'node-external-ip')], c.node, kubernetesIP);
  issueServing(tls, sans);
  const store = new ObjectStore(etcd);
  const registry = new ResourceRegistry(async () =>
    (await etcd.list(keyPrefix({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' }))).kvs.map((kv) => JSON.parse(kv.value)),
  );
  const api = new KubeApi(store, etcd, registry, {
    serverAddress: `${c.ip}:${port}`,
    hooks: {
      beforeDelete: async (info, obj) => {
        if (info.resource !== 'nodes') return;
        await removeEtcdMember(etcd, obj);
        await deleteNodePassword(store, obj.metadata.name);
      },
    },
  });
  const agentSecret = () => (str(s, 'agent-token') ? str(s, 'agent-token').split(':').pop()! : booted.secret);
  const supervisorDeps = {
    caPem: () => readCAs(tls).serverCA,
    serverSecret: () => booted.secret,
    agentSecret,
    criticalArgs: () => criticalArgs(s),
    bootstrap: () => readCAs(tls),
    dbInfo: () => linearizableMembers(etcd),
    registerNode: async (b: any) => {
      try {
        await verifyNodePassword(store, String(b.name), String(b.password ?? ''));
      } catch (e) {
        // k3s pkg/util SendError (the twin knows the node's address, not its source port).
        if (e instanceof NodePasswordRejected) log.error(`Sending HTTP 403 response to ${String(b.ip)}: ${e.message}`);
        throw e;
      }
      await upsertNode(store, {
        name: String(b.name),
        ip: String(b.ip),
        server: false,
        cniReady: Boolean(b.cniReady),
        labels: b.labels,
        ...(typeof b.machineID === 'string' && { machineID: b.machineID, bootID: String(b.bootID ?? '') }),
      });
      await renewNodeLease(store, String(b.name));
      return { ok: true };
    },
    // k3s collects them from the `kubernetes` Endpoints (each apiserver's advertise address) and etcd; the
    // twin has no Endpoints and takes every server Node's address, with this server's port.
    apiServers: async () =>
      ((await store.list(NODES, undefined)).items as any[])
        .filter((n) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] === 'true')
        .map((n) => (n.status?.addresses ?? []).find((a: any) => a.type === 'InternalIP')?.address)
        .filter(Boolean)
        .sort()
        .map((ip: string) => `${ip}:${port}`),
    clientCA: () => readCAs(tls).clientCA,
    nodeCert: async (kind: 'client' | 'serving', node: string, password: string, ips: string[]) => {
      try {
        await verifyNodePassword(store, node, password);
      } catch (e) {
        if (e instanceof NodePasswordRejected) log.error(`Sending HTTP 403 response to ${ips[0] ?? node}: ${e.message}`);
        throw e;
      }
      return signNodeCert(tls, kind, node, ips);
    },
  };
  await startHttps(tls, bind, port, async (req, res, body, user) => {
    if (await handleSupervisor(req, res, body, supervisorDeps)) return;
    if (!user) return unauthorized(res);
    if (opts.handleApi && (await opts.handleApi(req, res))) return;
    await api.handle(req, res, body);
  }).catch((e) => log.fatal(`failed to listen on :${port}: ${(e as Error).message}`));
  log.info(
    `Running kube-apiserver --advertise-address=${c.ip} --anonymous-auth=false --bind-address=${bind || '0.0.0.0'} --secure-port=${port} --tls-san=${sans.join(',')}`,
  );

  await waitForQuorumRead(etcd, booted.joining);
  log.info('ETCD server is now running');
  await checkBootstrapToken(etcd, booted.secret, tls);
  for (const o of baseObjects(kubernetesIP)) {
    const info = (await registry.findKind(o.apiVersion, o.kind))!;
    if (!(await store.tryGet(info, o.metadata.namespace, o.metadata.name))) await store.create(info, o.metadata.namespace, o).catch(() => undefined);
  }
  registry.invalidate();
  // This server's own agent asked its own supervisor before the apiserver was up: verified locally, the
  // Secret ensured now, a mismatch only an Event (k3s pkg/nodepassword/validate.go verifyLocalPassword).
  await verifyLocalPassword(store, c.node, serverNodePassword(p.dataDir)).catch((e) =>
    log.error(`Deferred node password secret validation failed: ${(e as Error).message}`),
  );
  log.info('Kube API server is now running');
  writeKubeconfig(p.kubeconfig, `https://127.0.0.1:${port}`, tls, str(s, 'write-kubeconfig-mode'));
  log.info(`Wrote kubeconfig ${p.kubeconfig}`);

  const facts = async (): Promise<NodeFacts> => {
    return {
      name: c.node,
      ip: c.ip,
      server: true,
      etcdMember: booted.memberName,
      cniReady: cniReady(p.cniDirs),
      labels: labelsFrom(list(s, 'node-label')),
      ...machineIdentity(),
    };
  };
  let registered = false;
  const heartbeat = async () => {
    try {
      // After the first registration a deleted Node is not re-created: its server is being removed.
      if (!registered || (await store.tryGet(NODES, undefined, c.node))) {
        await upsertNode(store, await facts());
        await renewNodeLease(store, c.node);
      }
      registered = true;
    } catch (e) {
      log.error(`Failed to update node ${c.node}: ${(e as Error).message}`);
    }
    setTimeout(heartbeat, Number(process.env.K3S_TWIN_HEARTBEAT_MS ?? 10_000));
  };
  await heartbeat();
  manageLearners(etcd, store);

  const deployer = new ManifestDeployer(p.manifests, store, registry, async (file, sum) => {
    const addons = (await registry.findKind('k3s.cattle.io/v1', 'Addon'))!;
    const name = file
      .split('/')
      .pop()!
      .replace(/\.(ya?ml|json)$/, '');
    const obj = { apiVersion: 'k3s.cattle.io/v1', kind: 'Addon', metadata: { name, namespace: 'kube-system' }, spec: { source: file, checksum: sum } };
    const cur = await store.tryGet(addons, 'kube-system', name);
    if (cur) await store.update(addons, 'kube-system', name, { ...cur, spec: obj.spec });
    else await store.create(addons, 'kube-system', obj);
  });
  if (!bool(s, 'disable-deploy')) deployer.start();
  notifyReady();
  log.info('k3s is up and running');
  await opts.onStarted?.({ node: c.node, ip: c.ip, store, registry, etcd, dataDir: p.dataDir, serviceCidr, cniDir: p.cniDirs[0] });
}

/**
 * The server's node password file: /etc/rancher/node/password as on a real server; under the data dir
 * when the data dir is not the default one (a twin run by a test as a user, as k3s does for rootless).
 */
function serverNodePassword(dataDir: string): string {
  try {
    return nodePassword(
      process.env.K3S_TWIN_NODE_PASSWORD_FILE ??
        (dataDir === '/var/lib/rancher/k3s' ? NODE_PASSWORD_FILE : join(dataDir, 'agent', 'etc', 'rancher', 'node', 'password')),
    );
  } catch (e) {
    return log.fatal(`unable to read node password file: ${(e as Error).message}`);
  }
}

function labelsFrom(items: string[]): Record<string, string> {
  return Object.fromEntries(
    items.map((l) => {
      const i = l.indexOf('=');
      return i < 0 ? [l, ''] : [l.slice(0, i), l.slice(i + 1)];
    }),
  );
}

/**
 * k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go manageLearners: every 15 s, on the etcd leader only, each
 * learner is promoted if etcd lets it (it refuses until the learner caught up: tried again next tick),
 * and every server Node's EtcdIsVoter is set from the member list as it was at the start of the tick
 * (so a learner promoted now reads as a voter one tick later). Learner stall tracking and eviction after
 * 5 minutes are not imitated (lab/TWIN.md).
 */
function manageLearners(etcd: EtcdClient, store: ObjectStore): void {
  const tickMs = Number(process.env.K3S_TWIN_LEARNER_TICK_MS ?? 15_000);
  const tick = async () => {
    try {
      const st = await etcd.status();
      if (st.leader === st.memberId) {
        const members = await etcd.members();
        const nodes = ((await store.list(NODES, undefined)).items as any[]).filter((n) => n.metadata?.labels?.['node-role.kubernetes.io/etcd'] === 'true');
        const isMember = new Set<string>();
        for (const m of members) {
          let status: MemberStatus = m.isLearner ? 'learner' : 'voter';
          if (m.isLearner && m.name) {
            try {
              await etcd.promote(m.id);
              log.info(`Promoted learner ${m.name}`);
            } catch {
              // not caught up yet: etcd refuses, try again next tick
            }
          }
          const node = nodes.find((n) => n.metadata?.annotations?.['etcd.k3s.cattle.io/node-name'] === m.name);
          if (!node) continue;
          isMember.add(node.metadata.name);
          let message = '';
          try {
            if (!m.clientURLs[0]) throw new Error('member has no client URL');
            await new EtcdClient(m.clientURLs[0]).status();
          } catch (e) {
            status = 'unhealthy';
            message = `failed to check etcd member status: ${(e as Error).message}`;
          }
          await setVoterCondition(store, node.metadata.name, status, message);
        }
        for (const n of nodes) if (!isMember.has(n.metadata.name)) await setVoterCondition(store, n.metadata.name, 'unjoined', '');
      }
    } catch {
      /* no status this time */
    }
    setTimeout(tick, tickMs);
  };
  setTimeout(tick, tickMs);
}

async function setVoterCondition(store: ObjectStore, name: string, status: MemberStatus, message: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const node = await store.tryGet(NODES, undefined, name);
    if (!node) return;
    const cond = etcdStatusCondition(status, message, node);
    if (!voterConditionDue(node, cond, Date.now())) return;
    const conditions = [...(node.status?.conditions ?? []).filter((c: any) => c.type !== 'EtcdIsVoter'), cond];
    try {
      await store.update(NODES, undefined, name, { ...node, status: { ...(node.status ?? {}), conditions } }, { expectedRV: node.metadata.resourceVersion });
      return;
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'Conflict')) return;
    }
  }
}

/**
 * Node deletion removes the node's etcd member first, as k3s's etcd finalizer does; etcd refuses while
 * the cluster is settling ("unhealthy cluster"), so this retries for up to 30 s before giving up.
 */
async function removeEtcdMember(etcd: EtcdClient, node: any): Promise<void> {
  const memberName = node.metadata?.annotations?.['etcd.k3s.cattle.io/node-name'];
  for (let attempt = 0; ; attempt++) {
    const members = await etcd.members();
    const m = members.find((x) => (memberName ? x.name === memberName : x.name.slice(0, x.name.lastIndexOf('-')) === node.metadata.name));
    if (!m) return;
    try {
      if (attempt === 0)
        log.info(`Removing name=${m.name} id=${m.id} address=${node.metadata?.annotations?.['etcd.k3s.cattle.io/node-address'] ?? ''} from etcd`);
      await etcd.removeMember(m.id);
      return;
    } catch (e) {
      if (attempt >= 30) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
