// Runs the selected phases: per phase, its hosts (serially or with a bound), per host the steps
// (probe → plan → apply), then the gates, then the steps that come after the gates. Check mode runs every
// probe and plan, never an apply: every change of every kind is performed by applyPlan, here, and only
// outside check mode.
import { CauseError, causesOf, stopOf } from '../errors.ts';
import { eachLimited } from '../util/limit.ts';
import { applyPlan } from './apply.ts';
import { describeChange } from './changes.ts';
import type { EngineContext, RunContext } from './context.ts';
import type { RunSummary } from './events.ts';
import type { Journal } from './journal.ts';
import { hostRecord } from './facts.ts';
import { concurrencyOf, stepApplies, stepProbes, type Gate, type HostRef, type Phase, type ProbeCommand, type ProbeResults, type Step } from './phase.ts';
import { prefetchProbes } from './prefetch.ts';
import { runProbes } from './probes.ts';
import { parallelismOf } from '../inventory/parallelism.ts';

export interface Waiver {
  cause: string;
  reason: string;
}

export interface RunPhasesOptions {
  phases: Phase[];
  /** The run's context; its facts are the run's store (the engine records what hooks return). */
  ctx: EngineContext;
  /** Counts as the run goes; still meaningful after a stop (what was done before it). */
  summary: RunSummary;
  journal?: Journal;
  waivers?: Waiver[];
  /** The caller ran prepareAll already (a session does, before it dials any host). */
  prepared?: boolean;
  /** The caller sent the phases' probes ahead already (a session does, beside its lock acquires). */
  prefetched?: boolean;
}

export function emptySummary(check: boolean): RunSummary {
  return { ok: 0, changed: 0, wouldChange: 0, stopped: 0, durationMs: 0, check, phaseDurations: {} };
}

/** Runs the phases, counting into `opts.summary`; a stop throws CauseError/CauseErrors. */
export async function runPhases(opts: RunPhasesOptions): Promise<RunSummary> {
  const { ctx, summary } = opts;
  const started = ctx.clock.now();
  const waived = new Map((opts.waivers ?? []).map((w) => [w.cause, w.reason]));
  if (!opts.prepared) await prepareAll(opts.phases, ctx, summary);
  // With a probe memo (a session's run): every phase's probes sent now, answered while the phases run (src/engine/prefetch.ts).
  if (!opts.prefetched) prefetchProbes(opts.phases, ctx);

  for (const phase of opts.phases) {
    const phaseStart = ctx.clock.now();
    const listed = phase.hosts(ctx);
    ctx.emit({ type: 'phase-start', phase: phase.id, title: phase.title, hosts: listed.map((h) => h.name) });
    const limit = concurrencyOf(phase, ctx);
    if (phase.preflight) await runPreflight(phase, listed, ctx, summary, waived);
    const hosts = phase.order ? phase.order(listed, ctx) : listed;
    // Serial phases stop at the first failing host: the next etcd join must not start after a failure.
    const runOne = async (host: HostRef) => {
      if (phase.concurrency === 'serial' && summary.stopped) return;
      try {
        await runHost(phase, host, ctx, summary, waived, opts.journal);
      } catch (err) {
        summary.stopped++;
        throw err;
      }
    };
    const errors = await eachLimited(hosts, limit, runOne);
    opts.journal?.checkpoint();
    summary.phaseDurations[phase.id] = ctx.clock.now() - phaseStart;
    if (errors.length) {
      const stop = stopOf(errors);
      if (!causesOf(stop).length) throw stop; // a bug: it surfaces as itself, without the phase-end
      ctx.emit({ type: 'phase-end', phase: phase.id, durationMs: summary.phaseDurations[phase.id], status: 'stopped' });
      summary.durationMs = ctx.clock.now() - started;
      throw stop;
    }
    ctx.emit({ type: 'phase-end', phase: phase.id, durationMs: summary.phaseDurations[phase.id], status: 'done' });
  }
  summary.durationMs = ctx.clock.now() - started;
  return summary;
}

/** Every selected phase's local preparation, before any phase runs; all their stops at once. */
export async function prepareAll(phases: Phase[], ctx: EngineContext, summary: RunSummary) {
  const stops: CauseError[] = [];
  for (const phase of phases) {
    if (!phase.prepare) continue;
    const prepared = await phase.prepare(ctx);
    if (prepared.facts) ctx.facts.setRun(prepared.facts);
    stops.push(...prepared.stops);
  }
  if (stops.length) {
    summary.stopped++;
    throw stopOf(stops);
  }
}

/** The phase's cross-host check: probe every host (read-only, in parallel), then one pure verdict. */
async function runPreflight(phase: Phase, hosts: HostRef[], ctx: EngineContext, summary: RunSummary, waived: Map<string, string>) {
  const preflight = phase.preflight!;
  const targets = (preflight.hosts?.(ctx) ?? hosts).filter((h) => !preflight.mayBeDown || answers(ctx, h));
  const results = new Map<HostRef, ProbeResults>();
  const errors = await eachLimited(targets, parallelismOf(ctx.inventory), async (host) => {
    const [probes] = await runProbeSets(host, ctx, [{ label: 'pre', commands: preflight.probe(host, ctx) }]);
    results.set(host, probes);
  });
  // A bug on one host surfaces as itself, also when another host stopped with a cause.
  if (errors.length) throw stopOf(errors);
  // In inventory order, whatever order the probes came back in: verdicts name hosts deterministically.
  const seen = new Map(targets.map((h) => [h, results.get(h)!]));
  const verdict = preflight.check(seen, ctx);
  const { stops: found, facts } = Array.isArray(verdict) ? { stops: verdict, facts: undefined } : verdict;
  if (facts) ctx.facts.setRun(facts);
  const stops = found.filter((stop) => !waive(stop, phase, ctx, waived));
  if (stops.length) {
    summary.stopped++;
    throw stopOf(stops);
  }
}

/** Whether the run holds a connection to `host` (one that did not answer was said when the run connected). */
function answers(ctx: EngineContext, host: HostRef): boolean {
  try {
    ctx.remote(host);
    return true;
  } catch {
    return false;
  }
}

/** A stop whose cause the environment waives becomes a printed waiver; returns whether it was waived. */
function waive(stop: CauseError, phase: Phase, ctx: RunContext, waived: Map<string, string>): boolean {
  const reason = waived.get(stop.causeId);
  if (reason === undefined) return false;
  ctx.emit({ type: 'waived', phase: phase.id, host: stop.host ?? '', cause: stop.causeId, reason });
  return true;
}

async function runHost(phase: Phase, host: HostRef, ctx: EngineContext, summary: RunSummary, waived: Map<string, string>, journal?: Journal) {
  const resumed = phase.rerunsOnResume ? undefined : journal?.completedFacts(phase.id, host.name);
  if (resumed) {
    ctx.facts.setHostRecord(host.name, resumed);
    for (const step of [...phase.steps, ...(phase.afterGates ?? [])].filter((s) => stepApplies(s, host, ctx))) {
      ctx.emit({ type: 'step-end', phase: phase.id, step: step.id, title: step.title, host: host.name, status: 'skipped', changes: [], durationMs: 0 });
    }
    return;
  }
  const recorded: Record<string, unknown> = {};
  await runSteps(phase, phase.steps, host, ctx, summary, waived, recorded, false);
  for (const gate of phase.gates ?? []) await runGate(phase, gate, host, ctx, summary, waived);
  // Probed after the gates: they see what the gates waited for (and the first changes' effect).
  if (phase.afterGates?.length) await runSteps(phase, phase.afterGates, host, ctx, summary, waived, recorded, false);
  if (!ctx.check) journal?.complete(phase.id, host.name, recorded);
}

/** Steps in order: probed together first, each planned, and applied unless in check mode. Returns whether any changed. */
async function runSteps(
  phase: Phase,
  steps: Step<any>[],
  host: HostRef,
  ctx: EngineContext,
  summary: RunSummary,
  waived: Map<string, string>,
  recorded: Record<string, unknown>,
  changedBefore: boolean,
) {
  // Each step's probe results, by the step's index.
  const probes = await probeSteps(steps, host, ctx);
  for (const [i, step] of steps.entries()) {
    if (!stepApplies(step, host, ctx)) continue;
    ctx.signal.throwIfAborted();
    const t0 = ctx.clock.now();
    ctx.emit({ type: 'step-start', phase: phase.id, step: step.id, title: step.title, host: host.name });
    // A change made by an earlier step may have changed what this step's probe sees: probe again.
    if (changedBefore && !ctx.check && step.probe) [probes[i]] = await probeSteps([step], host, ctx, i);
    const local = step.local ? await step.local(host, ctx) : undefined;
    const plan = step.plan({ host, probe: probes[i], local, ctx });
    for (const secret of plan.secrets ?? []) ctx.redact(secret);
    if (plan.facts) {
      const values = hostRecord(plan.facts);
      ctx.facts.setHostRecord(host.name, values);
      Object.assign(recorded, values);
    }
    const stops = (plan.stops ?? []).filter((stop) => !waive(stop, phase, ctx, waived));
    if (stops.length) throw stopOf(stops);
    const views = plan.changes.map(describeChange);
    let status: 'ok' | 'changed' | 'would-change' = 'ok';
    if (plan.changes.length && ctx.check) {
      status = 'would-change';
      summary.wouldChange++;
    } else if (plan.changes.length) {
      // Whatever the run's probes answered before may no longer hold, on any host (src/engine/probe-memo.ts).
      ctx.probeMemo?.forget();
      try {
        await applyPlan(plan.changes, host, ctx, { phase: phase.id, step: step.id });
      } finally {
        ctx.probeMemo?.forget();
      }
      status = 'changed';
      summary.changed++;
      changedBefore = true;
    } else {
      summary.ok++;
    }
    ctx.emit({
      type: 'step-end',
      phase: phase.id,
      step: step.id,
      title: step.title,
      host: host.name,
      status,
      changes: views,
      durationMs: ctx.clock.now() - t0,
    });
  }
  return changedBefore;
}

async function runGate(phase: Phase, gate: Gate, host: HostRef, ctx: RunContext, summary: RunSummary, waived: Map<string, string>) {
  const base = { phase: phase.id, gate: gate.id, title: gate.title, host: host.name };
  if (ctx.check && !gate.readOnly) {
    ctx.emit({ type: 'gate-end', ...base, status: 'would-wait', durationMs: 0 });
    return;
  }
  ctx.emit({ type: 'gate-start', ...base, budgetMs: gate.budgetMs });
  const t0 = ctx.clock.now();
  // The gate gets a signal that fires at its budget (or on Ctrl-C). A gate names its own cause when
  // it gives up; one that ignores the signal still cannot outlive budget + grace.
  const budget = new AbortController();
  const onAbort = () => budget.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  // The grace is the gate's time to name what it saw after its budget fired (a look or two on the hosts,
  // a few seconds over SSH on a busy host): a tenth of the budget, 1 to 10 s.
  const graceMs = Math.min(10_000, Math.max(1_000, gate.budgetMs / 10));
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      gate.run(host, ctx, budget.signal),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          budget.abort(new Error('budget'));
          setTimeout(() => reject(gateOverBudget(gate, host, ctx, t0, graceMs)), graceMs).unref();
        }, gate.budgetMs);
      }),
    ]);
    summary.ok++;
    ctx.emit({ type: 'gate-end', ...base, status: 'ok', durationMs: ctx.clock.now() - t0 });
  } catch (err) {
    ctx.signal.throwIfAborted();
    if (err instanceof CauseError && waive(err, phase, ctx, waived)) return;
    ctx.emit({ type: 'gate-end', ...base, status: 'failed', durationMs: ctx.clock.now() - t0 });
    throw err;
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}

/**
 * A gate that did not end within its budget and grace: GATE_LOOK_HUNG naming the remote command it still waits
 * for, on which host and for how long (the host, or the program the command asks, stopped answering); none in
 * flight: GATE_FAILED, the gate's own code did not end (a bug, not the hosts).
 */
function gateOverBudget(gate: Gate, host: HostRef, ctx: RunContext, started: number, graceMs: number): CauseError {
  const budget = `gate "${gate.title}" did not end within its budget of ${Math.round(gate.budgetMs / 1000)} s`;
  // A command it waits on has run through the grace at least: the gate was told to stop when the budget fired.
  const waiting = ctx.inFlight?.waitedFor(host.name, started, graceMs) ?? [];
  if (!waiting.length) return new CauseError('GATE_FAILED', { host: host.name, evidence: { seen: budget } });
  const [first] = waiting;
  const forS = (since: number) => `${Math.round((ctx.clock.now() - since) / 1000)} s`;
  // The others in flight too (at 30 hosts a look may wait on many), the first few of them by name.
  const others = waiting.slice(1);
  const named = others.slice(0, 5).map((w) => `${w.line.split('\n')[0].slice(0, 100)} on ${w.host} (${forS(w.since)})`);
  const more = others.length
    ? `; also still running: ${named.join('; ')}${others.length > named.length ? `; and ${others.length - named.length} more` : ''}`
    : '';
  return new CauseError('GATE_LOOK_HUNG', {
    host: first.host,
    message: `${first.host} did not answer the gate "${gate.title}" within its budget`,
    evidence: {
      command: first.line,
      seen: `${budget}: it was still waiting for this command on ${first.host}, running for ${forS(first.since)} with no answer${more}`,
    },
  });
}

/** Runs the probes of `steps`, one set per step (the run log names each by the step's index). */
function probeSteps(steps: Step<any>[], host: HostRef, ctx: RunContext, offset = 0): Promise<ProbeResults[]> {
  return runProbeSets(
    host,
    ctx,
    // A step that is not the host's probes nothing; the others keep their index as the label.
    steps.map((step, j) => ({ label: String(offset + j), commands: stepProbes(step, host, ctx) ?? {} })),
  );
}

/** Probes of one hook (a step, a preflight): `label` names them in the run log (`# probe <label>.<key>`). */
interface ProbeSet {
  label: string;
  commands: Record<string, ProbeCommand>;
}

/** Runs the sets' probes together (src/engine/probes.ts runProbes); the results come back per set, by each set's own keys. */
async function runProbeSets(host: HostRef, ctx: RunContext, sets: ProbeSet[]): Promise<ProbeResults[]> {
  // The batch frames every command under one key: the set's label and the command's key.
  const frames = sets.flatMap((set, i) => Object.entries(set.commands).map(([key, cmd]) => ({ frame: `${set.label}.${key}`, set: i, key, cmd })));
  const byFrame = await runProbes(
    host,
    ctx,
    frames.map(({ frame, cmd }) => [frame, cmd]),
  );
  const results: ProbeResults[] = sets.map(() => ({}));
  for (const { frame, set, key } of frames) results[set][key] = byFrame[frame];
  return results;
}
