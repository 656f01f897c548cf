// One node's removal, as four steps planned from what the precheck found (remove-quorum.ts), each listing every
// command and where it runs:
// 1. drain: the VIP handed to the surviving server first when this node holds kube-vip's lease, then the node
//    cordoned and drained through the eviction API (PodDisruptionBudgets honoured), through that survivor;
// 2. wipe: on the host, when it answers SSH, k3s stopped with everything it started (as k3s-killall.sh does)
//    and its state, config, unit, env file and binary removed. BEFORE the Node goes: a server whose k3s still
//    runs when its etcd member is removed finds the tombstone etcd leaves, moves its data aside and rejoins the
//    cluster as a new member (k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go Register: "tombstone file has been
//    detected, removing data dir to rejoin the cluster"; lab/TWIN.md imitates it), registering its Node and
//    node password again; stopped first, nothing can come back (the quorum check counts it as down);
// 3. delete: its Node deleted NORMALLY through the survivor (never forced: k3s's finalizer removes a server's
//    etcd member), then a bounded wait until the Node and its etcd member are gone;
// 4. secret: a bounded wait until its node-password Secret is gone (k3s deletes it with the Node; one still
//    there is deleted as the orphan it is).
// A node already gone plans nothing: the same --remove run again finishes a stopped one.
import { CauseError } from '../../src/errors.ts';
import type { Change } from '../../src/engine/changes.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, Step } from '../../src/engine/phase.ts';
import { poll } from '../../src/engine/poll.ts';
import { MEMBER_LIST_READ, readMembers } from '../../src/k3s/etcd-members.ts';
import { apiDelete, apiRead, apiShown, namesOf, type ApiRead } from '../../src/kube/api-read.ts';
import { killallCommand } from '../../src/k3s/killall.ts';
import { roleOf } from '../../src/k3s/paths.ts';
import { unitRuns } from '../../src/k3s/unit-state.ts';
import { NOT_FOUND } from '../../src/k3s/remote.ts';
import { HANDOVER_BUDGET_MS, handOver, handoverRuns } from '../../src/k3s/vip-handover.ts';
import { membersOf, orphanMemberStop } from './replace-quorum.ts';
import { nodeDelete, nodeRead, nodeSeen } from './node-api.ts';
import { passwordSecret, removedPaths, removeFacts, type RemoveFacts } from './remove-quorum.ts';
import { drainBudgetMs, drainRuns, drainThrough } from './rolling-evict.ts';

export const REMOVE_PHASE = 'k3s-remove';
/** How long the Node, its etcd member and its node-password Secret may take to go once the Node is deleted. */
const GONE_BUDGET_MS = 120_000;
const DELETE_TIMEOUT_MS = 100_000;
const POLL_MS = 2_000;

const factsOf = (ctx: { facts: { need: (f: typeof removeFacts) => RemoveFacts } }) => ctx.facts.need(removeFacts);
const hostNamed = (ctx: { topology: { servers: HostRef[] } }, name: string) => ctx.topology.servers.find((s) => s.name === name)!;

export const drainForRemoval: Step = {
  id: 'remove-drain',
  title: 'VIP handed over when held, node cordoned and drained (PodDisruptionBudgets honoured)',
  plan: ({ host, ctx }) => {
    const facts = factsOf(ctx);
    if (!facts.nodes.includes(host.name)) return { changes: [] };
    const via = hostNamed(ctx, facts.via);
    const holder = host.role === 'server' && facts.holder === host.name;
    return {
      changes: [
        {
          kind: 'action',
          description: `${holder ? `hand the VIP over to ${via.name}, then ` : ''}cordon and drain ${host.name} through the eviction API (PodDisruptionBudgets honoured)`,
          on: via.name,
          runs: [...(holder ? handoverRuns(host, via, ctx.inventory.derived.apiEndpoint) : []), ...drainRuns(host, via, ctx)],
          budgetMs: (holder ? HANDOVER_BUDGET_MS : 0) + drainBudgetMs(ctx) + 30_000,
          run: async (actx) => {
            if (holder) await handOver(actx, host, actx.host, actx.host, REMOVE_PHASE);
            await drainThrough(actx, actx.host, host, REMOVE_PHASE, 'removal');
          },
        },
      ],
    };
  },
};

/** The node-password Secret's name alone (a Table of metadata: its data never leaves the server). */
const secretRead = (name: string): ApiRead => ({
  path: `/api/v1/namespaces/kube-system/secrets/${passwordSecret(name)}`,
  kubectl: `get secret -n kube-system ${passwordSecret(name)} -o name --request-timeout=5s`,
  table: true,
  print: namesOf,
});

export const deleteForRemoval: Step = {
  id: 'remove-node',
  title: 'Node deleted, its etcd member gone',
  plan: ({ host, ctx }) => {
    const facts = factsOf(ctx);
    const members = host.role === 'server' ? membersOf(facts.members, host) : [];
    const node = facts.nodes.includes(host.name);
    if (!node && members.length) return { changes: [], stops: [orphanMemberStop(host, facts.via, members)] };
    if (!node) return { changes: [] };
    const gone = [`Node ${host.name}`, ...(host.role === 'server' ? ['its etcd member'] : [])];
    return {
      changes: [
        {
          kind: 'action',
          description: `delete Node ${host.name} through ${facts.via} (never forced${host.role === 'server' ? ": k3s's finalizer removes its etcd member" : ''}), then wait up to ${GONE_BUDGET_MS / 1000} s until ${gone.join(' and ')} ${gone.length > 1 ? 'are' : 'is'} gone`,
          on: facts.via,
          runs: [
            apiShown('DELETE', nodeDelete(host.name), facts.via),
            `every ${POLL_MS / 1000} s, at most ${GONE_BUDGET_MS / 1000} s, until each says it is gone: ${apiShown('GET', nodeRead(host.name), facts.via)}${host.role === 'server' ? `; ${apiShown('GET', MEMBER_LIST_READ, facts.via)}` : ''}`,
          ],
          budgetMs: DELETE_TIMEOUT_MS + GONE_BUDGET_MS + 60_000,
          run: async (actx) => {
            const del = await apiDelete(actx, actx.host, nodeDelete(host.name), DELETE_TIMEOUT_MS).catch((e: Error) => ({
              code: null,
              stdout: '',
              stderr: e.message,
            }));
            await waitGone(actx, actx.host, host, 'node', GONE_BUDGET_MS, `${del.stdout}${del.stderr}`.trim());
          },
        },
      ],
    };
  },
};

/**
 * What is left of a deleted Node, as read through `via`: deleting a Node deletes its node-password Secret (k3s-io/k3s
 * pkg/node/controller.go: the node controller's onRemove → nodepassword.Delete, in the wrangler/v3 releases; newer
 * ones give the Secret an OwnerReference to its Node instead, pkg/nodepassword/controller.go onChangeNode, so
 * Kubernetes' garbage collector deletes it with the Node — both read in k3s's source, the exact tags where each
 * holds not pinned here), and k3s's etcd member controller removes a server's member
 * before its Node goes (pkg/etcd/member_controller.go, as lab/TWIN.md cites it). Pure: the words of what remains.
 */
function leftOf(
  what: 'node' | 'secret',
  host: HostRef,
  seen: {
    node?: { code: number | null; stdout: string; stderr: string };
    secret?: { code: number | null; stdout: string; stderr: string };
    members?: ReturnType<typeof membersOf>;
  },
): string[] {
  const goneBy = (r?: { code: number | null; stderr: string }) => r !== undefined && r.code !== 0 && NOT_FOUND.test(r.stderr);
  const left: string[] = [];
  if (what === 'secret') return goneBy(seen.secret) ? [] : [`Secret kube-system/${passwordSecret(host.name)} ${seen.secret ? 'still there' : 'not read'}`];
  if (!goneBy(seen.node)) left.push(`Node ${host.name} ${seen.node ? `still there (${nodeSeen(host.name, seen.node)})` : 'not read'}`);
  if (host.role === 'server') {
    if (seen.members === undefined) left.push('member list unreadable');
    else if (seen.members.length) left.push(`member ${seen.members.map((m) => `${m.id} ${m.name}`).join(', ')} still listed`);
  }
  return left;
}

/** Waits until what `what` names of `host` is gone, within `budgetMs`; returns what is left (nothing: gone). */
async function lookGone(ctx: RunContext, via: HostRef, host: HostRef, what: 'node' | 'secret', budgetMs: number): Promise<string[]> {
  let left: string[] = ['not looked yet'];
  const failed = (e: Error) => ({ code: null, stdout: '', stderr: e.message });
  await poll(ctx, ctx.signal, {
    everyMs: POLL_MS,
    withinMs: budgetMs,
    look: async () => {
      if (what === 'secret') {
        left = leftOf(what, host, { secret: await apiRead(ctx, via, secretRead(host.name), 15_000).catch(failed) });
        return left.length ? undefined : true;
      }
      const [node, list] = await Promise.all([
        apiRead(ctx, via, nodeRead(host.name), 15_000).catch(failed),
        host.role === 'server' ? apiRead(ctx, via, MEMBER_LIST_READ, 15_000).catch(failed) : undefined,
      ]);
      const all = list && readMembers(list);
      left = leftOf(what, host, { node, members: all ? membersOf(all, host) : undefined });
      return left.length ? undefined : true;
    },
  });
  ctx.signal.throwIfAborted();
  return left;
}

async function waitGone(ctx: RunContext, via: HostRef, host: HostRef, what: 'node' | 'secret', budgetMs: number, output: string): Promise<void> {
  const left = await lookGone(ctx, via, host, what, budgetMs);
  if (!left.length) return;
  throw new CauseError(host.role === 'server' && left.some((l) => l.startsWith('member')) ? 'ETCD_MEMBER_NOT_REMOVED' : 'NODE_NOT_REMOVED', {
    host: host.name,
    message: `What is left of ${host.name} did not go within ${budgetMs / 1000} s`,
    evidence: {
      command:
        what === 'secret'
          ? `GET /api/v1/namespaces/kube-system/secrets/${passwordSecret(host.name)} (${via.name}'s API, or k3s kubectl there)`
          : `DELETE /api/v1/nodes/${host.name}; GET /api/v1/nodes/${host.name}${host.role === 'server' ? '; GET /db/info' : ''} (${via.name}'s API, or k3s kubectl there)`,
      seen: left.join('; '),
      excerpt: output,
    },
  });
}

/** How long the Secret may take to go with its Node before it is deleted as the orphan it is. */
const SECRET_SETTLE_MS = 30_000;
const SECRET_GONE_MS = 60_000;
const secretDelete = (name: string): ApiRead => ({
  path: `/api/v1/namespaces/kube-system/secrets/${passwordSecret(name)}`,
  kubectl: `delete secret -n kube-system ${passwordSecret(name)} --ignore-not-found --timeout=30s`,
});

/**
 * Last, once the Node is gone and k3s no longer runs on the host: its node-password Secret. k3s deletes it with
 * the Node (see leftOf); one still there (a host that did not answer SSH, so its k3s was not stopped, can ensure
 * it again) is an orphan: it is deleted, as k3s's own sweep of orphaned node-password Secrets would after 10 min
 * (pkg/nodepassword/controller.go MinOrphanSecretAge), so that a node of that name can join again.
 */
export const secretForRemoval: Step = {
  id: 'remove-secret',
  title: 'node-password Secret gone',
  plan: ({ host, ctx }) => {
    const facts = factsOf(ctx);
    if (!facts.nodes.includes(host.name) && !facts.secrets.includes(host.name)) return { changes: [] };
    const secret = `kube-system/${passwordSecret(host.name)}`;
    return {
      changes: [
        {
          kind: 'action',
          description: `wait up to ${SECRET_SETTLE_MS / 1000} s until ${secret} is gone with its Node; if it is still there (or back), delete it and wait up to ${SECRET_GONE_MS / 1000} s`,
          on: facts.via,
          runs: [
            `every ${POLL_MS / 1000} s, at most ${SECRET_SETTLE_MS / 1000} s: ${apiShown('GET', secretRead(host.name), facts.via)}, its name only`,
            `if it is still there: ${apiShown('DELETE', secretDelete(host.name), facts.via)}; then the same GET every ${POLL_MS / 1000} s, at most ${SECRET_GONE_MS / 1000} s`,
          ],
          budgetMs: SECRET_SETTLE_MS + SECRET_GONE_MS + 60_000,
          run: async (actx) => {
            if (!(await lookGone(actx, actx.host, host, 'secret', SECRET_SETTLE_MS)).length) return;
            const del = await apiDelete(actx, actx.host, secretDelete(host.name), 45_000).catch((e: Error) => ({
              code: null,
              stdout: '',
              stderr: e.message,
            }));
            await waitGone(actx, actx.host, host, 'secret', SECRET_GONE_MS, `${del.stdout}${del.stderr}`.trim());
          },
        },
      ],
    };
  },
};

export const wipeForRemoval: Step = {
  id: 'remove-wipe',
  title: 'k3s stopped with everything it started and wiped from the host (when it answers SSH)',
  plan: ({ host, ctx }) => {
    const seen = factsOf(ctx).hosts[host.name];
    const active = unitRuns(seen?.active);
    if (!seen?.reachable || (!seen.present.length && !active && !seen.shims)) return { changes: [] };
    const unit = roleOf(host).unit;
    const changes: Change[] = [
      {
        kind: 'command',
        description: `stop ${unit} and everything it started as k3s-killall.sh does (${seen.shims} container shim${seen.shims === 1 ? '' : 's'} and their processes, their mounts, CNI links, the VIP if held)`,
        command: killallCommand(unit, ctx.inventory.inventory.controlPlane.vip),
        sudo: true,
        timeoutMs: 120_000,
      },
      {
        kind: 'command',
        description: `disable ${unit} and remove k3s from the host: ${seen.present.join(', ') || 'nothing on disk'}`,
        command: `systemctl disable ${unit} 2>/dev/null; rm -rf ${removedPaths(host).join(' ')}; systemctl daemon-reload; systemctl reset-failed ${unit} 2>/dev/null; true`,
        sudo: true,
        timeoutMs: 120_000,
      },
    ];
    return { changes };
  },
};

export const removeSteps: Step[] = [drainForRemoval, wipeForRemoval, deleteForRemoval, secretForRemoval];
