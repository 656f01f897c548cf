// The drain of a rolling change and its undoing, through the Kubernetes API over the run's SSH connection to
// a server (src/kube/api-access.ts): cordon and evict (src/k3s/drain.ts, PodDisruptionBudgets honoured),
// and the uncordon once the host is back — only of a node this tool cordoned.
import type { ActionChange } from '../../src/engine/changes.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { HostRef, Step } from '../../src/engine/phase.ts';
import { CORDONED_BY, drainNode, uncordon } from '../../src/k3s/drain.ts';
import { cordonedByRun, rollingRestart, rollingView } from './rolling-facts.ts';

/**
 * The drain's whole budget, cordon to the last evicted pod gone (a PDB that never allows is named at its end):
 * the inventory's k3s.drainSeconds, 180 s unless it says otherwise.
 */
export const drainBudgetMs = (ctx: ReadContext): number => (ctx.inventory.inventory?.k3s?.drainSeconds ?? 180) * 1000;

/** What a drain of `node` through `via`'s API runs, in a plan's words (a rolling change's and a removal's). */
export function drainRuns(node: HostRef, via: HostRef, ctx: ReadContext): string[] {
  return [
    `PATCH /api/v1/nodes/${node.name} spec.unschedulable=true   (Kubernetes API through the SSH connection to ${via.name})`,
    `POST /api/v1/namespaces/<ns>/pods/<pod>/eviction for each pod on ${node.name} but DaemonSet and mirror pods, again every 5 s while a PodDisruptionBudget refuses (429), at most ${drainBudgetMs(ctx) / 1000} s until they are gone`,
  ];
}

/**
 * The drain's API client. Loaded when a drain starts: @kubernetes/client-node costs a second of startup, which
 * a run that drains nothing (a converged run, a cold build) must not pay.
 */
async function drainApi(ctx: RunContext, via: HostRef) {
  const [{ clusterApi }, { clientDrainApi }] = await Promise.all([import('../../src/kube/api-access.ts'), import('../../src/kube/drain-client.ts')]);
  return clientDrainApi(await clusterApi(ctx, via));
}

export async function drainThrough(ctx: RunContext, via: HostRef, node: HostRef, phase: string, mark = 'rolling change'): Promise<void> {
  const api = await drainApi(ctx, via);
  await drainNode(api, node.name, {
    budgetMs: drainBudgetMs(ctx),
    clock: ctx.clock,
    signal: ctx.signal,
    mark,
    progress: (line) =>
      ctx.emit({
        type: 'check',
        phase,
        check: 'drain',
        title: 'drain',
        host: node.name,
        ok: true,
        detail: line,
      }),
  });
}

/** The names of the Nodes (the API's objects) that carry this tool's cordon mark. */
export function cordonedIn(nodes: { metadata?: { name?: string; annotations?: Record<string, string> } }[]): string[] {
  return nodes.filter((n) => n.metadata?.name && n.metadata.annotations?.[CORDONED_BY]).map((n) => n.metadata!.name!);
}

function vantageFor(host: HostRef, ctx: ReadContext): string | undefined {
  const members = ctx.facts.run(rollingView)?.members ?? [];
  if (host.role === 'server' && members.includes(host.name)) return host.name;
  return members.find((m) => m !== host.name) ?? members[0];
}

/** After the gates: the node schedulable again, when this run (or a stopped one) cordoned it. */
export const uncordonStep: Step = {
  id: 'uncordon',
  title: 'node schedulable again (only when this tool cordoned it)',
  plan: ({ host, ctx }) => {
    const mine = ctx.facts.get(host.name, rollingRestart) === true || (ctx.facts.run(cordonedByRun) ?? []).includes(host.name);
    const via = vantageFor(host, ctx);
    if (!mine || !via) return { changes: [] };
    const change: ActionChange = {
      kind: 'action',
      description: `uncordon ${host.name} (its ${CORDONED_BY} annotation removed with spec.unschedulable)`,
      on: via,
      runs: [
        `PATCH /api/v1/nodes/${host.name} spec.unschedulable=false, annotation ${CORDONED_BY} removed   (Kubernetes API through the SSH connection to ${via})`,
      ],
      budgetMs: 60_000,
      run: async (actx) => {
        await uncordon(await drainApi(actx, actx.host), host.name);
      },
    };
    return { changes: [change] };
  },
};
