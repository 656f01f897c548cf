// The replaced server's steps in k3s-join, before it installs and joins like any joiner: its old Node is
// deleted NORMALLY through a surviving server (k3s's finalizer then removes its etcd member; a forced
// delete would skip that and leave a member no server answers for), the wait for the member to go is
// bounded, then its old k3s state on the host is wiped so that it joins as a new member.
// The replace mode places them in k3s-join (modes/replace.ts); they are the replaced server's alone
// (Step.appliesTo): no other host probes or shows them.
import { poll } from '../../src/engine/poll.ts';
import { CauseError } from '../../src/errors.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { MEMBER_LIST_READ, readMembers } from '../../src/k3s/etcd-members.ts';
import { apiDelete, apiRead, apiShown } from '../../src/kube/api-read.ts';
import { SERVER_ROLE } from '../../src/k3s/paths.ts';
import { unitActiveProbe, unitRuns } from '../../src/k3s/unit-state.ts';
import { killallCommand, K3S_STATE, SHIMS_PROBE } from '../../src/k3s/killall.ts';
import { NOT_FOUND } from '../../src/k3s/remote.ts';
import { nodeDelete, nodeRead, nodeSeen } from './node-api.ts';
import { membersOf, orphanMemberStop, replaceFacts } from './replace-quorum.ts';
import { joinTargetOf } from './join-target.ts';

const MEMBER_GONE_BUDGET_MS = 120_000;
const DELETE_TIMEOUT_MS = 100_000;
const POLL_MS = 2_000;
const replacing = (host: HostRef, ctx: ReadContext) => ctx.topology.replacing === host.name;

export const deleteOldNode: Step = {
  id: 'replace-node',
  title: 'old Node deleted, its etcd member gone',
  appliesTo: replacing,
  plan: ({ host, ctx }) => {
    // Absent without a quorum check (a run that replaces nothing): nothing to delete.
    const facts = ctx.facts.run(replaceFacts);
    if (!replacing(host, ctx) || !facts) return { changes: [] };
    if (facts.orphanMembers.length) return { changes: [], stops: [orphanMemberStop(host, facts.via, facts.orphanMembers)] };
    if (!facts.nodePresent) return { changes: [] };
    return {
      changes: [
        {
          kind: 'action',
          description: `delete Node ${host.name} through ${facts.via} (never forced: its finalizer removes the etcd member) and wait up to ${MEMBER_GONE_BUDGET_MS / 1000} s until the member is gone; ${host.name} then joins ${joinTargetOf(ctx)} as a new member`,
          on: facts.via,
          runs: [
            apiShown('DELETE', nodeDelete(host.name), facts.via),
            `every ${POLL_MS / 1000} s, at most ${MEMBER_GONE_BUDGET_MS / 1000} s, until both say it is gone: ${apiShown('GET', nodeRead(host.name), facts.via)}; ${apiShown('GET', MEMBER_LIST_READ, facts.via)}`,
          ],
          budgetMs: DELETE_TIMEOUT_MS + MEMBER_GONE_BUDGET_MS + 60_000,
          run: async (actx) => {
            // The finalizer is waited for below (the fallback's kubectl waits for it itself, within the member budget).
            const del = await apiDelete(actx, actx.host, nodeDelete(host.name), DELETE_TIMEOUT_MS).catch((e: Error) => ({
              code: null,
              stdout: '',
              stderr: e.message,
            }));
            await waitMemberGone(actx, actx.host, host, `${del.stdout}${del.stderr}`.trim());
          },
        },
      ],
    };
  },
};

export async function waitMemberGone(ctx: RunContext, via: HostRef, host: HostRef, deleteOutput: string): Promise<void> {
  let seen = 'not looked yet';
  const gone = await poll(ctx, ctx.signal, {
    everyMs: POLL_MS,
    withinMs: MEMBER_GONE_BUDGET_MS,
    look: async () => {
      const [node, list] = await Promise.all([
        apiRead(ctx, via, nodeRead(host.name), 15_000).catch(() => undefined),
        apiRead(ctx, via, MEMBER_LIST_READ, 15_000).catch(() => undefined),
      ]);
      const nodeGone = node !== undefined && node.code !== 0 && NOT_FOUND.test(node.stderr);
      const all = list && readMembers(list);
      const members = all ? membersOf(all, host) : undefined;
      if (nodeGone && members?.length === 0) return true;
      seen = [
        nodeGone ? `Node ${host.name} gone` : `Node ${host.name} still there (${nodeSeen(host.name, node)})`,
        members === undefined
          ? 'member list unreadable'
          : members.length
            ? `member ${members.map((m) => `${m.id} ${m.name}`).join(', ')} still listed`
            : 'no member left',
      ].join('; ');
      return undefined;
    },
  });
  if (gone) return;
  ctx.signal.throwIfAborted();
  throw new CauseError('ETCD_MEMBER_NOT_REMOVED', {
    host: host.name,
    message: `${host.name}'s Node or etcd member did not go within ${MEMBER_GONE_BUDGET_MS / 1000} s of its deletion`,
    evidence: { command: `DELETE /api/v1/nodes/${host.name}; GET /db/info (${via.name}'s API, or k3s kubectl there)`, seen, excerpt: deleteOutput },
  });
}

export const wipeOldState: Step = {
  id: 'replace-wipe',
  title: 'old k3s state wiped',
  appliesTo: replacing,
  // Probed on the replaced server only (appliesTo).
  probe: (): Record<string, ProbeCommand> => ({
    present: { command: `for p in ${K3S_STATE.join(' ')}; do [ -e "$p" ] && echo "$p"; done; true`, sudo: true },
    active: unitActiveProbe(SERVER_ROLE.unit),
    shims: { command: SHIMS_PROBE, sudo: true },
  }),
  plan: ({ host, probe, ctx }) => {
    if (!replacing(host, ctx)) return { changes: [] };
    const present = probe.present.stdout.trim().split('\n').filter(Boolean);
    const active = unitRuns(probe.active.stdout);
    const shims = Number(probe.shims?.stdout.trim() || 0);
    if (!present.length && !active && !shims) return { changes: [] };
    const unit = SERVER_ROLE.unit;
    return {
      changes: [
        {
          kind: 'command',
          description: `stop k3s and everything it started as k3s-killall.sh does (${shims} container shim${shims === 1 ? '' : 's'} and their processes, their mounts, CNI links, the VIP if held)`,
          command: killallCommand(unit, ctx.inventory.inventory.controlPlane.vip),
          sudo: true,
          timeoutMs: 120_000,
        },
        {
          kind: 'command',
          description: `wipe the old state: ${present.join(', ') || 'nothing on disk'} (the images tarball is uploaded again by the install)`,
          command: `rm -rf ${K3S_STATE.join(' ')}`,
          sudo: true,
          timeoutMs: 120_000,
        },
      ],
    };
  },
};

export const replaceSteps: Step[] = [deleteOldNode, wipeOldState];
