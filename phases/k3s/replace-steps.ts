// The replaced server's steps in k3s-join, before it installs and joins like any joiner: its old Node is
// deleted NORMALLY through a surviving server (k3s's finalizer then removes its etcd member; a forced
// delete would skip that and leave a member no server answers for), the wait for the member to go is
// bounded, then its old k3s state on the host is wiped so that it joins as a new member.
// On every other host and run these steps plan nothing.
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { serverRefs } from '../hosts.ts';
import { MEMBER_LIST_COMMAND } from '../verify/checks.ts';
import { readMembers } from '../verify/members.ts';
import { DATA_DIR, SERVER_ROLE } from './render.ts';
import { kubectl, NOT_FOUND, pause } from './remote-k3s.ts';
import { REPLACE_FACTS, membersOf, type ReplaceFacts } from './replace-quorum.ts';

const MEMBER_GONE_BUDGET_MS = 120_000;
const POLL_MS = 2_000;
/** What the host keeps of its membership: the datastore, certificates, token, agent state, node password. */
export const OLD_STATE = [DATA_DIR, '/etc/rancher/node'];

const replacing = (host: HostRef, ctx: RunContext) => ctx.replace === host.name;
const factsOf = (ctx: RunContext) => ctx.facts.get<ReplaceFacts>(REPLACE_FACTS, 'replace');

export const deleteOldNode: Step = {
  id: 'replace-node',
  title: 'old Node deleted, its etcd member gone (--replace only)',
  plan: ({ host, ctx }) => {
    const facts = factsOf(ctx);
    if (!replacing(host, ctx) || !facts) return { changes: [] };
    if (facts.orphanMembers.length) {
      return {
        changes: [],
        stops: [
          new CauseError('ETCD_MEMBER_NOT_REMOVED', {
            host: host.name,
            message: `The Node ${host.name} is gone but etcd still lists a member of it`,
            evidence: { command: `k3s kubectl get --raw /db/info (on ${facts.via})`, seen: facts.orphanMembers.map((m) => `${m.id} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}`).join('; ') },
          }),
        ],
      };
    }
    if (!facts.nodePresent) return { changes: [] };
    return {
      changes: [
        {
          kind: 'command',
          description: `delete Node ${host.name} through ${facts.via} (never forced: its finalizer removes the etcd member) and wait up to ${MEMBER_GONE_BUDGET_MS / 1000} s until the member is gone; ${host.name} then joins ${ctx.inventory.derived.joinTarget} as a new member`,
          command: `k3s kubectl delete node ${host.name} --ignore-not-found  # on ${facts.via}`,
          sudo: true,
        },
      ],
    };
  },
  apply: async (_plan, host, ctx) => {
    const via = serverRefs(ctx.inventory).find((s) => s.name === factsOf(ctx)!.via)!;
    // kubectl waits for the finalizer itself; its own timeout stays inside the member budget.
    const del = await kubectl(ctx, via, `delete node ${host.name} --ignore-not-found --timeout=90s`, 100_000).catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
    await waitMemberGone(ctx, via, host, `${del.stdout}${del.stderr}`.trim());
  },
};

async function waitMemberGone(ctx: RunContext, via: HostRef, host: HostRef, deleteOutput: string): Promise<void> {
  const budget = AbortSignal.any([ctx.signal, AbortSignal.timeout(MEMBER_GONE_BUDGET_MS)]);
  let seen = '';
  do {
    const node = await kubectl(ctx, via, `get node ${host.name} -o name`, 15_000).catch(() => undefined);
    const nodeGone = node !== undefined && node.code !== 0 && NOT_FOUND.test(node.stderr);
    const list = await ctx.remote(via).exec(MEMBER_LIST_COMMAND, { sudo: true, timeoutMs: 15_000, signal: ctx.signal }).catch(() => undefined);
    const all = list && readMembers(list);
    const members = all ? membersOf(all, host) : undefined;
    if (nodeGone && members?.length === 0) return;
    seen = [
      nodeGone ? `Node ${host.name} gone` : `Node ${host.name} still there (${(node?.stdout || node?.stderr || 'no answer').trim()})`,
      members === undefined ? 'member list unreadable' : members.length ? `member ${members.map((m) => `${m.id} ${m.name}`).join(', ')} still listed` : 'no member left',
    ].join('; ');
  } while (await pause(ctx, POLL_MS, budget));
  ctx.signal.throwIfAborted();
  throw new CauseError('ETCD_MEMBER_NOT_REMOVED', {
    host: host.name,
    message: `${host.name}'s Node or etcd member did not go within ${MEMBER_GONE_BUDGET_MS / 1000} s of its deletion`,
    evidence: { command: `k3s kubectl delete node ${host.name} (on ${via.name}); k3s kubectl get --raw /db/info`, seen, excerpt: deleteOutput },
  });
}

export const wipeOldState: Step = {
  id: 'replace-wipe',
  title: 'old k3s state wiped (--replace only)',
  probe: (host, ctx): Record<string, ProbeCommand> =>
    replacing(host, ctx)
      ? {
          present: { command: `for p in ${OLD_STATE.join(' ')}; do [ -e "$p" ] && echo "$p"; done; true`, sudo: true },
          active: { command: `systemctl is-active ${SERVER_ROLE.unit}` },
        }
      : {},
  plan: ({ host, probe, ctx }) => {
    if (!replacing(host, ctx)) return { changes: [] };
    const present = probe.present.stdout.trim().split('\n').filter(Boolean);
    const active = ['active', 'activating'].includes(probe.active.stdout.trim());
    if (!present.length && !active) return { changes: [] };
    const unit = SERVER_ROLE.unit;
    return {
      changes: [
        {
          kind: 'command',
          description: `stop k3s and wipe the old state: ${present.join(', ') || 'nothing on disk'}`,
          // KillMode=process leaves k3s's children (etcd) running after a stop: kill the whole unit.
          command: `systemctl stop ${unit}; systemctl kill --signal=KILL ${unit} 2>/dev/null; rm -rf ${OLD_STATE.join(' ')}`,
          sudo: true,
          timeoutMs: 120_000,
        },
      ],
    };
  },
};

export const replaceSteps: Step[] = [deleteOldNode, wipeOldState];
