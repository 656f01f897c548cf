// The contract of a phase and its steps (DEVELOPERS.md "Design principles").
// A phase: an id, what it needs, the hosts it runs on, its steps. A step: probe → plan → apply.
// The probe is read-only and always runs (check mode too); the plan is pure data computed from the
// probe; the engine applies exactly the plan and never in check mode.
import type { CauseError } from '../errors.ts';
import type { Change } from './changes.ts';
import type { LocalContext, PrepareContext, ReadContext, RunContext } from './context.ts';
import type { FactValue } from './facts.ts';
import type { HostRef } from './host-ref.ts';
import type { ProbeCommand, ProbeResults } from './probe-types.ts';

export type { HostRef } from './host-ref.ts';

export type { ApiReads, ProbeCommand, ProbeResult, ProbeResults } from './probe-types.ts';

/** What a step's plan returns: the changes to make, or the causes that forbid going on. */
export interface Plan {
  changes: Change[];
  /** Gate failures seen in the probe (e.g. a kernel too old). The run stops with them, check mode too. */
  stops?: CauseError[];
  /** Host facts the plan learnt from the probe, for later steps and gates (src/engine/facts.ts hostFact). */
  facts?: FactValue<'host'>[];
  /** Secret values the plan saw in a probe (a token): the engine registers them, so no log or event shows them. */
  secrets?: string[];
}

interface StepInput<L> {
  host: HostRef;
  probe: ProbeResults;
  /** What `local()` computed on the operator's machine (artifact hashes, rendered files). */
  local: L;
  /** Reads only: a plan is pure (no connection, no events). */
  ctx: ReadContext;
}

export interface Step<L = undefined> {
  id: string;
  title: string;
  /** Read-only commands to run on the host. They are batched with the phase's other probes. */
  probe?: (host: HostRef, ctx: ReadContext) => Record<string, ProbeCommand>;
  /** Read-only work on the operator's machine (reading artifacts, rendering). Runs in check mode too. */
  local?: (host: HostRef, ctx: LocalContext) => Promise<L>;
  /**
   * Pure: from what was seen to what must change. There is no apply of a step's own: the engine performs
   * the plan's changes (src/engine/apply.ts), so the plan is all a run does.
   */
  plan: (input: StepInput<L>) => Plan;
  /**
   * A step of some hosts only (the server a --replace run rebuilds): on any other it is neither probed, nor
   * planned, nor shown, rather than reported "ok" for work that was never its to do. Reads only the inventory,
   * the topology and the run's facts.
   */
  appliesTo?: (host: HostRef, ctx: ReadContext) => boolean;
}

/** Whether `step` is one of `host`'s in this run (Step.appliesTo). */
export function stepApplies(step: Step<any>, host: HostRef, ctx: ReadContext): boolean {
  return step.appliesTo?.(host, ctx) ?? true;
}

/** What `step` probes on `host`: nothing when it has no probe or is not one of the host's (Step.appliesTo). */
export function stepProbes(step: Step<any>, host: HostRef, ctx: ReadContext): Record<string, ProbeCommand> | undefined {
  return stepApplies(step, host, ctx) ? step.probe?.(host, ctx) : undefined;
}

/** A bounded wait or check after a host's steps. Only runs outside check mode unless `readOnly`. */
export interface Gate {
  id: string;
  title: string;
  /** Budget in ms: every wait ends, either ok or in a named cause. */
  budgetMs: number;
  /** Read-only gates also run in check mode (they change nothing and need nothing the run would create). */
  readOnly?: boolean;
  run: (host: HostRef, ctx: RunContext, signal: AbortSignal) => Promise<void>;
}

/**
 * A check across hosts, before any host's steps (e.g. two hosts with the same machine-id: cloned VMs).
 * Its probe is read-only and runs in check mode too; `check` is pure.
 */
interface Preflight {
  /** The hosts to probe; the phase's own hosts when absent. Reads only ctx.inventory and ctx.topology. */
  hosts?: (ctx: Pick<ReadContext, 'inventory' | 'topology'>) => HostRef[];
  probe: (host: HostRef, ctx: ReadContext) => Record<string, ProbeCommand>;
  /** Pure: the causes that forbid the phase, and run facts for its steps and gates (src/engine/facts.ts runFact). */
  check: (seen: Map<HostRef, ProbeResults>, ctx: ReadContext) => CauseError[] | { stops: CauseError[]; facts?: FactValue<'run'>[] };
  /**
   * Its hosts are looked at when they answer SSH: one that does not is a warning when the run connects, and
   * is left out of `seen` (the check judges without it) instead of stopping the run.
   */
  mayBeDown?: boolean;
}

/** How many of a phase's hosts run at once (1 for a serial phase). */
export function concurrencyOf(phase: Pick<Phase, 'concurrency'>, ctx: Pick<ReadContext, 'inventory'>): number {
  const c = phase.concurrency;
  return typeof c === 'function' ? c(ctx) : c === 'serial' ? 1 : c;
}

export interface Phase {
  /**
   * Local, read-only work done for every selected phase before the FIRST phase changes anything (check
   * mode too): e.g. Cilium's values from the GitOps repository, so an unresolved variable stops the run
   * before any host is touched. Returns the causes that forbid the run and the phase's prepared values as
   * run facts, typed (src/engine/facts.ts runFact): its steps and gates read them with ctx.facts.need.
   */
  prepare?: (ctx: PrepareContext) => Promise<{ stops: CauseError[]; facts?: FactValue<'run'>[] }>;
  id: string;
  title: string;
  needs: string[];
  /** The hosts it runs on. Reads only ctx.inventory and ctx.topology (the engine calls it before connecting). */
  hosts: (ctx: Pick<ReadContext, 'inventory' | 'topology'>) => HostRef[];
  /**
   * Its hosts need not answer SSH (a node being removed may be dead): they are connected when they can be, a
   * failure is a warning, and its steps reach them only through actions that say what they do without them.
   */
  hostsMayBeDown?: boolean;
  /** How hosts run: 'serial' (etcd joins) or in parallel with a bound (a number, or one the inventory sets). */
  concurrency: 'serial' | number | ((ctx: Pick<ReadContext, 'inventory'>) => number);
  /**
   * The order its hosts run in, decided after the preflight from what it saw (its run facts): e.g. the VIP
   * holder last in a rolling change. Pure; the hosts as `hosts` gives them when absent.
   */
  order?: (hosts: HostRef[], ctx: ReadContext) => HostRef[];
  preflight?: Preflight;
  steps: Step<any>[];
  gates?: Gate[];
  /**
   * Steps that need the gates passed, probed once the gates have ended: what a gate made possible (the
   * founder's token and kubeconfig, once its API serves) or what must follow the checks (the failover drill).
   */
  afterGates?: Step<any>[];
  /**
   * Its gates' first reads, started with the probes the run asks ahead (src/engine/prefetch.ts) instead of in
   * their turn: a gate takes such a read only while the run's probe memo has forgotten nothing since it was
   * started (ProbeMemo.mark: nothing applied, no command that writes, no wait), else it reads again. Called once,
   * never in check mode unless every gate of the phase only reads.
   */
  lookAhead?: (ctx: RunContext) => void;
  /** Set while a phase is declared in the DAG but not built yet: a run that selects it refuses to start. */
  pending?: string;
  /**
   * The phase proves the cluster's state now and changes nothing (verify): a resumed run runs it again
   * instead of trusting what an interrupted run saw before the rest of the build changed the cluster.
   */
  rerunsOnResume?: boolean;
}
