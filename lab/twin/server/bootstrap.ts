// How a server gets its datastore (k3s pkg/cluster, pkg/etcd/etcd.go Start/join):
// existing data on disk wins (cluster-init and server are then ignored); otherwise a joiner validates
// the founder (CA hash in the token, critical args), receives the CAs, adds itself as an etcd learner and
// starts its member with initial-cluster-state=existing; a founder creates the CAs and a one-member cluster.
import { existsSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { type Settings, str } from '../config.ts';
import { EtcdClient } from '../etcd/client.ts';
import { isInitialized, peerURL, clientURL } from '../etcd/process.ts';
import { log } from '../log.ts';
import { ensureCAs, readCAs, tlsPaths, writeCAs } from '../pki.ts';
import { formatToken, hashCA, newSecret, parseToken } from '../token.ts';
import { criticalArgs, mismatched } from './critical.ts';
import { memberName, runMember, type Member } from './etcd-member.ts';
import { fetchJSON, getCACerts } from './fetch.ts';
import type { ServerPaths } from './paths.ts';

export interface Booted {
  secret: string;
  member: Member;
  memberName: string;
  joining: boolean;
}

export interface Ctx {
  s: Settings;
  p: ServerPaths;
  ip: string;
  node: string;
  listenLoopback: boolean;
}

/** k3s wraps bootstrap failures like this before logging them at fatal level. */
export const prepFail = (msg: string): never => log.fatal(`Error: preparing server: failed to bootstrap cluster data: ${msg}`);

export function writeToken(p: ServerPaths, caPem: string, secret: string): void {
  writeFileSync(p.token, formatToken(caPem, secret) + '\n', { mode: 0o600 });
  // node-token is kept as a compatibility link to token (docs cli/token).
  try {
    if (existsSync(p.nodeToken)) unlinkSync(p.nodeToken);
    symlinkSync('token', p.nodeToken);
  } catch {
    /* best effort */
  }
}

/** k3s pkg/util/token.go NormalizeToken: the password of a token, or k3s's error for a malformed one. */
function normalizeToken(token: string): string {
  try {
    return parseToken(token).password;
  } catch {
    return log.fatal('failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>');
  }
}

export function secretFromConfigOrFile(c: Ctx): string | undefined {
  const t = str(c.s, 'token');
  if (t) return normalizeToken(t);
  if (existsSync(c.p.token)) return normalizeToken(readFileSync(c.p.token, 'utf8'));
  return undefined;
}

export async function bootstrap(c: Ctx): Promise<Booted> {
  if (existsSync(c.p.tombstone)) {
    log.info('tombstone file has been detected, removing data dir to rejoin the cluster');
    renameSync(c.p.etcd, `${c.p.etcd}-old-${Math.floor(Date.now() / 1000)}`);
  }
  if (isInitialized(c.p.etcd)) return restart(c);
  if (str(c.s, 'server')) return join(c);
  return found(c);
}

function restart(c: Ctx): Booted {
  const secret = secretFromConfigOrFile(c);
  if (!secret) return log.fatal(`${c.p.token} does not exist, please pass --token to complete the restoration`);
  const name = memberName(c.p.etcdName, c.node);
  log.info('Managed etcd cluster bootstrap already complete and initialized');
  const member = runMember({
    name,
    dataDir: c.p.etcd,
    nodeIP: c.ip,
    listenLoopback: c.listenLoopback,
    initialCluster: `${name}=${peerURL(c.ip)}`,
    state: 'existing',
  });
  return { secret, member, memberName: name, joining: false };
}

function found(c: Ctx): Booted {
  const tls = tlsPaths(c.p.dataDir);
  ensureCAs(tls);
  const ca = readCAs(tls).serverCA;
  const given = str(c.s, 'token');
  let secret = newSecret();
  if (given) {
    let t: ReturnType<typeof parseToken>;
    try {
      t = parseToken(given);
    } catch {
      return log.fatal('failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>');
    }
    if (t.caHash && t.caHash !== hashCA(ca)) prepFail(`token CA hash does not match the Cluster CA certificate hash: ${t.caHash} != ${hashCA(ca)}`);
    secret = t.password;
  }
  writeToken(c.p, ca, secret);
  const name = memberName(c.p.etcdName, c.node, true);
  log.info(`Starting etcd for new cluster, cluster-reset=false`);
  const member = runMember({
    name,
    dataDir: c.p.etcd,
    nodeIP: c.ip,
    listenLoopback: c.listenLoopback,
    initialCluster: `${name}=${peerURL(c.ip)}`,
    state: 'new',
  });
  return { secret, member, memberName: name, joining: false };
}

async function join(c: Ctx): Promise<Booted> {
  const server = str(c.s, 'server').replace(/\/+$/, '');
  const given = str(c.s, 'token');
  // k3s pkg/cluster/bootstrap.go shouldBootstrapLoad: the token is parsed and the server's CA checked
  // against its hash before anything else; the password is first used by compareConfig.
  if (!given) return prepFail('failed to check if bootstrap data has been initialized: token is required to join a cluster');
  const tokenFail = (msg: string): never => prepFail(`failed to check if bootstrap data has been initialized: failed to validate token: ${msg}`);
  let t: ReturnType<typeof parseToken>;
  try {
    t = parseToken(given);
  } catch (e) {
    return tokenFail((e as Error).message);
  }

  let cacerts: string;
  try {
    cacerts = await getCACerts(server);
  } catch (e) {
    return tokenFail((e as Error).message);
  }
  if (!t.caHash)
    log.warn(
      "Cluster CA certificate is not trusted by the host CA bundle, but the token does not include a CA hash. Use the full token from the server's node-token file to enable Cluster CA validation.",
    );
  if (t.caHash && t.caHash !== hashCA(cacerts))
    return tokenFail(`token CA hash does not match the Cluster CA certificate hash: ${t.caHash} != ${hashCA(cacerts)}`);
  log.info('Managed etcd cluster not yet initialized');

  // compareConfig: /v1-k3s/config as user "node" with the agent token (or the token); when that request
  // fails (a wrong password: 401) k3s only warns and goes on to the bootstrap request, which then fails.
  const agentToken = str(c.s, 'agent-token');
  let nodePassword = t.password;
  try {
    if (agentToken) nodePassword = parseToken(agentToken).password;
  } catch (e) {
    return prepFail(`failed to validate server configuration: ${(e as Error).message}`);
  }
  let theirs: Record<string, string> | undefined;
  try {
    theirs = (await fetchJSON(`${server}/v1-k3s/config`, { ca: cacerts, auth: { user: 'node', password: nodePassword } })).criticalArgs;
  } catch (e) {
    log.warn(`Skipping cluster configuration validation: ${(e as Error).message}`);
  }
  if (theirs) {
    const diff = mismatched(criticalArgs(c.s), theirs);
    if (diff.length) {
      for (const field of diff) log.warn(`critical configuration mismatched: ${field}`);
      return prepFail('failed to validate server configuration: critical configuration value mismatch between servers');
    }
  }

  // httpBootstrap: /v1-k3s/server-bootstrap as user "server"; its error is k3s's last word.
  const auth = { user: 'server', password: t.password };
  let bootstrapData: any;
  try {
    bootstrapData = await fetchJSON(`${server}/v1-k3s/server-bootstrap`, { ca: cacerts, auth });
  } catch (e) {
    return prepFail((e as Error).message);
  }

  const tls = tlsPaths(c.p.dataDir);
  writeCAs(tls, bootstrapData);
  writeToken(c.p, cacerts, t.password);

  const name = memberName(c.p.etcdName, c.node);
  // k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go Start: the join is retried in-process every second while
  // etcd refuses it for another learner or an unhealthy cluster, or the member list cannot be fetched;
  // any other error is fatal.
  let cluster: string[];
  for (;;) {
    try {
      cluster = await etcdJoin(c, server, cacerts, auth, name);
      break;
    } catch (e) {
      const msg = (e as Error).message;
      if (e instanceof MemberListError) log.info(`Waiting to retrieve etcd cluster member list: ${msg}`);
      else if (/etcdserver: (too many learner members in cluster|unhealthy cluster)/.test(msg))
        log.info(`Waiting for other members to finish joining etcd cluster: ${msg}`);
      else return log.fatal(`etcd cluster join failed: ${msg}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  log.info(`Starting etcd to join cluster with members [${cluster.join(' ')}]`);
  const member = runMember({ name, dataDir: c.p.etcd, nodeIP: c.ip, listenLoopback: c.listenLoopback, initialCluster: cluster.join(','), state: 'existing' });
  return { secret: t.password, member, memberName: name, joining: true };
}

class MemberListError extends Error {}

/** pkg/etcd/etcd.go join: the member list from the server joined, a duplicate-name check, the learner added. */
async function etcdJoin(c: Ctx, server: string, cacerts: string, auth: { user: string; password: string }, name: string): Promise<string[]> {
  let info: any;
  try {
    info = await fetchJSON(`${server}/db/info`, { ca: cacerts, auth });
  } catch (e) {
    throw new MemberListError(`failed to get MemberList from server: ${(e as Error).message}`);
  }
  const endpoints: string[] = info.members.filter((m: any) => !m.isLearner).flatMap((m: any) => m.clientURLs ?? []);
  if (!endpoints.length) throw new Error('no client URLs in the cluster member list');
  const etcd = new EtcdClient(endpoints[0]);
  const myPeer = peerURL(c.ip);
  const members = await etcd.members();
  let add = true;
  const cluster: string[] = [];
  for (const m of members) {
    const host = m.peerURLs[0] ? new URL(m.peerURLs[0]).hostname : '';
    // An added-but-unstarted member has no name yet; if it has our address it is us (k3s join()).
    const mName = !m.name && host === c.ip ? name : m.name;
    if (mName === name && host === c.ip) add = false;
    if (m.peerURLs[0]) cluster.push(`${mName}=${m.peerURLs[0]}`);
    const last = mName.lastIndexOf('-');
    const memberNode = last > 1 ? mName.slice(0, last) : mName;
    if (mName !== name && memberNode === c.node) {
      unlinkSync(c.p.etcdName);
      throw new Error('duplicate node name found, please use a unique name for this node');
    }
  }
  if (add) {
    log.info(`Adding member ${name}=${myPeer} to etcd cluster [${cluster.join(' ')}]`);
    await etcd.addLearner(myPeer);
    cluster.push(`${name}=${myPeer}`);
  }
  return cluster;
}

export function localEtcd(c: Ctx): EtcdClient {
  return new EtcdClient(c.listenLoopback ? clientURL('127.0.0.1') : clientURL(c.ip));
}
