// Before a removal changes anything (check mode too): what the cluster looks like, read through its servers,
// and whether etcd keeps quorum at EVERY step of it. Each server's API is asked for /readyz on the server
// itself; etcd's member list, the Nodes, the node-password Secrets and kube-vip's lease holder are read through
// the first surviving server that answers (every API call of the removal goes through it, never through a node
// being removed). A server removal is an etcd membership change with the removed server already stopped: the
// other members answering must be a majority of the current ones at every step, or the cluster stops.
import { CauseError, causesOf } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { runFact, type FactValue } from '../../src/engine/facts.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { MEMBER_LIST_READ, readMembers, type Member } from '../../src/k3s/etcd-members.ts';
import { K3S_STATE, SHIMS_PROBE } from '../../src/k3s/killall.ts';
import { CONFIG_FILE, K3S_BIN, roleOf } from '../../src/k3s/paths.ts';
import { VIP_HOLDER_READ } from '../../src/k3s/remote.ts';
import { apiRead, namesOf } from '../../src/kube/api-read.ts';
import { READYZ } from './node-api.ts';
import { membersOf } from './replace-quorum.ts';

/** What a removed host keeps of k3s on disk: its state, its config, its unit and env file, the binary. */
export const removedPaths = (host: Pick<HostRef, 'role'>): string[] => [
  ...K3S_STATE,
  CONFIG_FILE.replace(/\/[^/]+$/, ''),
  roleOf(host).unitFile,
  roleOf(host).envFile,
  K3S_BIN,
];

/** One removed host as the precheck found it over its own connection. */
interface HostSeen {
  /** It answered SSH: its k3s can be stopped and wiped. */
  reachable: boolean;
  /** The paths of removedPaths it still has. */
  present: string[];
  /** Its k3s unit's state (systemctl is-active). */
  active: string;
  /** Its pods' container shims still running. */
  shims: number;
}

export interface RemoveFacts {
  /** The surviving server every API call goes through. */
  via: string;
  /** kube-vip's lease holder, when it answered. */
  holder?: string;
  /** The Nodes registered now. */
  nodes: string[];
  /** The names whose node-password Secret (kube-system/<name>.node-password.k3s) exists now. */
  secrets: string[];
  /** etcd's members now. */
  members: Member[];
  /** Each removed host, by name. */
  hosts: Record<string, HostSeen>;
}

/** What the removal's precheck found: the plans of the removal steps read it. */
export const removeFacts = runFact<RemoveFacts>('remove');

/** One server's answer to /readyz (asked on the server itself), or why there was none. */
export interface ServerAnswer {
  name: string;
  address: string;
  ready: boolean;
  said: string;
}

const majority = (n: number) => Math.floor(n / 2) + 1;

/**
 * Pure: the first step of the removal that would cost etcd its quorum, as the cause that refuses the whole
 * removal; undefined when every step keeps it. A server's k3s is stopped BEFORE its Node is deleted (remove-steps.ts:
 * a k3s still running when its member goes rejoins through its tombstone), so while its member is removed it
 * does not answer: the members that do, the others that are ready, must be a majority of the members at that
 * step (2 of 3, 3 of 4, 3 of 5). `order` is the removal order (agents count for nothing); a server without a member
 * (removed already) changes nothing.
 */
export function removalQuorum(order: HostRef[], members: Member[], servers: ServerAnswer[]): CauseError | undefined {
  let current = [...members];
  const readyMembers = (list: Member[]) => list.filter((m) => servers.some((s) => s.ready && membersOf([m], s).length)).length;
  const state = servers.map((s) => `${s.name}: ${s.ready ? 'API ready' : s.said}`).join('; ');
  const refuse = (host: string, message: string) =>
    new CauseError('QUORUM_AT_RISK', {
      host,
      message,
      evidence: { command: "GET /db/info; GET /readyz at each server's API (or k3s kubectl get --raw there)", seen: state },
    });
  for (const [i, host] of order.entries()) {
    if (host.role !== 'server') continue;
    const mine = membersOf(current, host);
    if (!mine.length) continue;
    const after = current.filter((m) => !mine.includes(m));
    if (!after.length)
      return refuse(host.name, `Removing ${host.name} would leave no etcd member: a cluster cannot remove all its servers (step ${i + 1} of ${order.length})`);
    const up = readyMembers(after);
    if (up < majority(current.length))
      return refuse(
        host.name,
        `While ${host.name} is stopped and its member removed (step ${i + 1} of ${order.length}), ${up} of the ${current.length} etcd members would answer; ${majority(current.length)} are needed: the cluster would stop`,
      );
    current = after;
  }
  return undefined;
}

/** Pure: the removal order of `names`: agents first, then servers, the founder last among them (inventory order otherwise). */
export function removalOrder(hosts: HostRef[], names: string[]): HostRef[] {
  const chosen = hosts.filter((h) => names.includes(h.name));
  return [...chosen.filter((h) => h.role === 'agent'), ...chosen.filter((h) => h.role === 'server' && !h.founder), ...chosen.filter((h) => h.founder)];
}

const PASSWORD_SUFFIX = '.node-password.k3s';
/** The node-password Secret k3s keeps for a node: kube-system/<node>.node-password.k3s. */
export const passwordSecret = (node: string) => `${node}${PASSWORD_SUFFIX}`;

/** How long the precheck waits for the servers: right after a server stopped, etcd may still be electing a leader. */
const ANSWER_TIMEOUT_MS = 20_000;

/**
 * Reads every server (read-only) and each removed host, and stops with QUORUM_AT_RISK when a step would lose
 * quorum (or no surviving server answers at all); returns the facts the removal steps plan from.
 */
export async function checkRemoval(ctx: RunContext): Promise<FactValue<'run'>[]> {
  const order = removalOrder([...ctx.topology.servers, ...ctx.topology.agents], ctx.topology.removing ?? []);
  const removing = new Set(order.map((h) => h.name));
  const answers = await Promise.all(ctx.topology.servers.map((s) => readyOn(ctx, s)));
  const via = ctx.topology.servers.find((s) => !removing.has(s.name) && answers.find((a) => a.name === s.name)?.ready);
  if (!via)
    throw new CauseError('QUORUM_AT_RISK', {
      host: ctx.topology.servers
        .filter((s) => !removing.has(s.name))
        .map((s) => s.name)
        .join(', '),
      message: 'No server that stays answers /readyz: nothing could be removed through it, and the cluster would not keep quorum',
      evidence: {
        command: "GET /readyz at each server's API (or k3s kubectl get --raw='/readyz' there)",
        seen: answers.map((a) => `${a.name}: ${a.ready ? 'API ready' : a.said}`).join('; '),
      },
    });
  // Names only (Tables of metadata): no Secret's data leaves the server.
  const [list, nodes, secrets, holder] = await Promise.all([
    apiRead(ctx, via, MEMBER_LIST_READ, ANSWER_TIMEOUT_MS),
    apiRead(
      ctx,
      via,
      { path: '/api/v1/nodes', kubectl: "get nodes -o jsonpath='{.items[*].metadata.name}' --request-timeout=5s", table: true, print: namesOf },
      ANSWER_TIMEOUT_MS,
    ),
    apiRead(
      ctx,
      via,
      {
        path: '/api/v1/namespaces/kube-system/secrets',
        kubectl: "get secrets -n kube-system -o jsonpath='{.items[*].metadata.name}' --request-timeout=5s",
        table: true,
        print: namesOf,
      },
      ANSWER_TIMEOUT_MS,
    ),
    apiRead(ctx, via, VIP_HOLDER_READ, ANSWER_TIMEOUT_MS),
  ]);
  const members = readMembers(list);
  if (!members || nodes.code !== 0 || secrets.code !== 0)
    throw new CauseError('QUORUM_AT_RISK', {
      host: via.name,
      message: `${via.name} answers /readyz but not with etcd's member list, the Nodes or the Secrets: the removal cannot be judged`,
      evidence: {
        command: `GET /db/info, /api/v1/nodes, /api/v1/namespaces/kube-system/secrets (${via.name}'s API, or k3s kubectl there)`,
        seen: `${list.stderr}${nodes.stderr}${secrets.stderr}`.trim(),
      },
    });
  const stop = removalQuorum(order, members, answers);
  if (stop) throw stop;
  const hosts: Record<string, HostSeen> = {};
  await Promise.all(order.map(async (h) => (hosts[h.name] = await hostSeen(ctx, h))));
  for (const h of order)
    if (!hosts[h.name].reachable)
      ctx.emit({
        type: 'warning',
        host: h.name,
        message: `${h.name} does not answer SSH: it is removed from the cluster through ${via.name}, but k3s on it is not stopped or wiped; do that by hand if it comes back (runbooks/membership.md)`,
      });
  const words = (out: string) => out.split(/\s+/).filter(Boolean);
  return [
    removeFacts({
      via: via.name,
      ...(holder.code === 0 && holder.stdout.trim() && { holder: holder.stdout.trim() }),
      nodes: words(nodes.stdout),
      secrets: words(secrets.stdout)
        .filter((n) => n.endsWith(PASSWORD_SUFFIX))
        .map((n) => n.slice(0, -PASSWORD_SUFFIX.length)),
      members,
      hosts,
    }),
  ];
}

async function readyOn(ctx: RunContext, s: HostRef): Promise<ServerAnswer> {
  try {
    const r = await apiRead(ctx, s, READYZ, ANSWER_TIMEOUT_MS);
    const ready = r.code === 0 && r.stdout.trim() === 'ok';
    return {
      name: s.name,
      address: s.address,
      ready,
      said: ready ? 'ok' : `API not ready (${(r.stderr || r.stdout).trim().split('\n')[0] || `exit ${r.code}`})`,
    };
  } catch (err) {
    const cause = causesOf(err)[0];
    return { name: s.name, address: s.address, ready: false, said: cause ? `not reachable (${cause.causeId})` : `no answer (${(err as Error).message})` };
  }
}

async function hostSeen(ctx: RunContext, h: HostRef): Promise<HostSeen> {
  try {
    const r = await ctx
      .remote(h)
      .exec(
        `for p in ${removedPaths(h).join(' ')}; do [ -e "$p" ] && echo "path $p"; done; echo "active $(systemctl is-active ${roleOf(h).unit})"; echo "shims $(${SHIMS_PROBE})"`,
        { sudo: true, timeoutMs: ANSWER_TIMEOUT_MS, signal: ctx.signal },
      );
    const lines = r.stdout.split('\n');
    const value = (key: string) => lines.filter((l) => l.startsWith(`${key} `)).map((l) => l.slice(key.length + 1).trim());
    return { reachable: true, present: value('path'), active: value('active')[0] ?? '', shims: Number(value('shims')[0] || 0) };
  } catch {
    return { reachable: false, present: [], active: '', shims: 0 };
  }
}
