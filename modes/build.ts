// `bootstrap <env>`: the cold build (and every rerun of it), the DAG of phases/index.ts with the
// inventory's roles. Also what `bootstrap plan <env>` shows of it, and the note a run ends with behind a bastion.
import { existsSync } from 'node:fs';
import type { RunPlan } from '../src/engine/session.ts';
import { concurrencyOf } from '../src/engine/phase.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { allPhases, validatedOrder } from '../phases/index.ts';
import { rollingLeftOut, rollingOptions, type RollingOptions } from '../phases/k3s/rolling-facts.ts';
import { kubeconfigPath } from '../src/k3s/kubeconfig-file.ts';
import { dagRun, type RunSelection } from './compose.ts';

/**
 * A build: the whole DAG. Its rolling change (phases/k3s-rolling.ts) takes a backup first, as `bootstrap backup`
 * would (`options.backupId` names it), unless the operator said --no-backup: then a warning says so before
 * the run starts.
 */
export function buildRun(loaded: LoadedInventory, sel: RunSelection, options: RollingOptions = { backup: true, backupId: 'rolling' }): RunPlan {
  return withRollingOptions(dagRun(loaded, { ordered: validatedOrder(allPhases()), sel, topology: topologyOf(loaded) }), options);
}

/** The plan with the rolling change's options as run facts, and the warning --no-backup calls for. */
export function withRollingOptions(plan: RunPlan, options: RollingOptions): RunPlan {
  const warnings = options.backup
    ? plan.warnings
    : [
        ...(plan.warnings ?? []),
        '--no-backup: a rolling change (an upgrade, a changed flag) restarts k3s WITHOUT the backup it takes first; there is no pre-change backup to roll back to',
      ];
  return { ...plan, warnings, facts: [rollingOptions(options), rollingLeftOut(!plan.phases.some((p) => p.id === 'rolling-servers'))] };
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
    order: p.concurrency === 'serial' ? 'one host at a time' : `up to ${concurrencyOf(p, c)} hosts at once`,
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
