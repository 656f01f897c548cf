// What every kind of run shares when it assembles its RunPlan: steps placed by id (k0sctl's
// Phases.InsertBefore, not array positions), and for a run of the DAG the selection (--from, --only,
// --until, a recovery's default end), the refusal of phases not built yet, the artifacts on disk and the
// warnings said before the run starts. Everything here is checked before any host is dialled.
import { stopOf, UsageError } from '../src/errors.ts';
import type { Topology } from '../src/engine/context.ts';
import { selectPhases } from '../src/engine/dag.ts';
import type { Phase, Step } from '../src/engine/phase.ts';
import type { RunPlan } from '../src/engine/session.ts';
import { checkArtifacts } from '../src/inventory/artifacts.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';

/** `bootstrap <env> [--from PHASE | --only PHASE | --until PHASE] [--check] [--resume]`. */
export interface RunSelection {
  from?: string;
  only?: string;
  until?: string;
  check: boolean;
  resume: boolean;
}

/** `steps` with `added` placed just before the step `id` (a bug when there is none). */
export function insertBefore(steps: Step<any>[], id: string, ...added: Step<any>[]): Step<any>[] {
  const at = indexOf(steps, id);
  return [...steps.slice(0, at), ...added, ...steps.slice(at)];
}

/** `steps` with `added` placed just after the step `id` (a bug when there is none). */
export function insertAfter(steps: Step<any>[], id: string, ...added: Step<any>[]): Step<any>[] {
  const at = indexOf(steps, id) + 1;
  return [...steps.slice(0, at), ...added, ...steps.slice(at)];
}

function indexOf(steps: Step<any>[], id: string): number {
  const at = steps.findIndex((s) => s.id === id);
  if (at < 0) throw new Error(`no step ${id} among ${steps.map((s) => s.id).join(', ')}`);
  return at;
}

/**
 * Where a recovery (restore, replace) ends when the operator names no --until: the last phase that is
 * built, so it converges as far as a cold build can (a phase still declared pending is named, not faked).
 */
export function lastBuiltPhase(ordered: Phase[]): string | undefined {
  return ordered.filter((p) => !p.pending).at(-1)?.id;
}

export interface DagRun {
  /** The DAG in run order (validatedOrder). */
  ordered: Phase[];
  sel: RunSelection;
  topology: Topology;
  /** A recovery converges what is built: it does not wait for phases still to come. */
  recovery?: 'restore' | 'replace';
  /** Refuses a selection this kind of run cannot do (UsageError), before anything else is checked. */
  refuse?: (selected: Phase[]) => void;
  precheck?: RunPlan['precheck'];
}

/** A run of the DAG as a RunPlan, or the usage error or missing artifacts that forbid it. */
export function dagRun(loaded: LoadedInventory, run: DagRun): RunPlan {
  const { ordered, sel, recovery } = run;
  const until = sel.until ?? (recovery ? lastBuiltPhase(ordered) : undefined);
  const phases = selectPhases(ordered, { from: sel.from, only: sel.only, until });
  run.refuse?.(phases);
  const pending = phases.filter((p) => p.pending);
  if (pending.length) {
    const built = phases.filter((p) => !p.pending).map((p) => p.id);
    throw new UsageError(
      `phase${pending.length > 1 ? 's' : ''} ${pending.map((p) => p.id).join(', ')}: ${pending[0].pending}` +
        (built.length ? `; select the built ones with --until ${built.at(-1)}` : ''),
    );
  }
  const missing = checkArtifacts(loaded.derived);
  if (missing.length) throw stopOf(missing);
  const warnings = loaded.warnings.map((w) => `${w.path}: ${w.message}`);
  if (recovery && !sel.until && until !== ordered.at(-1)!.id)
    warnings.push(
      `the ${recovery} ends at ${until}: ${ordered
        .filter((p) => p.pending)
        .map((p) => p.id)
        .join(', ')} not built yet`,
    );
  return { phases, topology: run.topology, check: sel.check, resume: sel.resume, warnings, ...(run.precheck && { precheck: run.precheck }) };
}
