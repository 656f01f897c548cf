// `bootstrap <env>`: the cold build (and every rerun of it), the DAG of phases/index.ts with the
// inventory's roles. Also what `bootstrap plan <env>` shows of it, and the note a run ends with behind a bastion.
import { existsSync } from 'node:fs';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { allPhases, validatedOrder } from '../phases/index.ts';
import { kubeconfigPath } from '../src/k3s/kubeconfig-file.ts';
import { dagRun, type RunSelection } from './compose.ts';

export function buildRun(loaded: LoadedInventory, sel: RunSelection): RunPlan {
  return dagRun(loaded, { ordered: validatedOrder(allPhases()), sel, topology: topologyOf(loaded) });
}

/** One phase of the build as `bootstrap plan` shows it, without connecting. */
export interface PhaseOutline {
  id: string;
  title: string;
  needs: string[];
  hosts: string[];
  order: string;
  steps: string[];
  gates: { title: string; budgetS: number }[];
  pending?: string;
}

export function buildOutline(loaded: LoadedInventory): PhaseOutline[] {
  const c = { inventory: loaded, topology: topologyOf(loaded) };
  return validatedOrder(allPhases()).map((p) => ({
    id: p.id,
    title: p.title,
    needs: p.needs,
    hosts: p.hosts(c).map((h) => h.name),
    order: p.concurrency === 'serial' ? 'one host at a time' : `up to ${p.concurrency} hosts at once`,
    steps: p.steps.map((s) => s.title),
    gates: (p.gates ?? []).map((g) => ({ title: g.title, budgetS: Math.round(g.budgetMs / 1000) })),
    ...(p.pending && { pending: p.pending }),
  }));
}

/** Behind a bastion the fetched kubeconfig's VIP is out of the operator's reach: where the way in is written. */
export function kubeconfigNote(loaded: LoadedInventory, stateDir: string): string | undefined {
  const jump = loaded.derived.bastion;
  const file = kubeconfigPath(stateDir);
  if (!jump || !existsSync(file)) return undefined;
  return `kubeconfig: ${file} (the API is behind the bastion ${jump.host}; the tunnel to open and how to dial it are at the top of the file)`;
}
