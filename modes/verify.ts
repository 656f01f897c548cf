// `bootstrap verify <env> [--drill]`: a run of the verify phase alone.
// Without --drill it only reads, so it runs as a check-mode session: no lock is taken (it may run next to
// a build, or while an operator investigates) and no journal is written. The drill stops k3s on the VIP
// holder, so `--drill` runs as a normal session: it takes every host's lock (it must not race a build)
// and check mode never runs it.
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { allPhases, validatedOrder } from '../phases/index.ts';
import { verifyPhase } from '../phases/verify.ts';
import { dagRun } from './compose.ts';

export function verifyRun(loaded: LoadedInventory, opts: { drill: boolean }): RunPlan {
  const phases = allPhases().map((p) => (p.id === 'verify' ? verifyPhase({ drill: opts.drill, standalone: true }) : p));
  return dagRun(loaded, { ordered: validatedOrder(phases), sel: { only: 'verify', check: !opts.drill, resume: false }, topology: topologyOf(loaded) });
}
