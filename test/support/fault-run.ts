// Running one fault-matrix row (test/support/fault-matrix.ts) in a lab test: the fault put in at its
// trigger, the stop asserted (cause, host, within the budget plus 2 s), the heal, and the rerun that must
// pass. What "nothing lost" means is the calling file's: it checks that after runFaultRow returns.
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { bootstrap, stopsOf, type BootstrapRun } from './cluster.ts';
import type { FaultRow } from './fault-matrix.ts';

export interface FaultEnv {
  stateDir: string;
  inventory: string;
  /** Values of the `<name>` placeholders in the row's arguments (a backup id known only at run time). */
  values?: Record<string, string>;
}

export interface Injection {
  /** Brings the cluster to where the row's moment can happen (a server to join again), before its run. */
  setup?: (env: FaultEnv) => Promise<void>;
  /** Puts the fault in place (resolves once it is). */
  inject: (env: FaultEnv) => Promise<void>;
  heal: (env: FaultEnv) => Promise<void>;
  /** A run of its own that must be under way first (the live lock holder). */
  alongside?: (env: FaultEnv) => { started: Promise<void>; done: Promise<unknown> };
  /** The run's inventory, when the row needs another one (built once, from the shared one). */
  inventory?: (env: FaultEnv) => string;
  /**
   * The rerun after the heal, when it is not `bootstrap` with the row's arguments: the operator's own
   * command from a runbook. It must exit 0 as well.
   */
  rerun?: (env: FaultEnv, args: string[]) => Promise<Pick<BootstrapRun, 'code' | 'stdout' | 'stderr'>>;
}

/** The row's arguments with their `<name>` placeholders filled from env.values (one without a value throws). */
function argsFor(args: string[], env: FaultEnv): string[] {
  return args.map((a) =>
    a.replace(/<([a-z][a-z0-9-]*)>/g, (_, name: string) => {
      const v = env.values?.[name];
      if (v === undefined) throw new Error(`no value for <${name}> in the row's arguments`);
      return v;
    }),
  );
}

/** The event a row's trigger names. */
function isTrigger(row: FaultRow, e: any): boolean {
  const t = row.trigger;
  if (t.at === 'before' || e.type !== t.at) return false;
  if (t.at === 'phase-start') return e.phase === t.phase;
  if (t.at === 'step-start') return e.phase === t.phase && e.step === t.step && (t.host === undefined || e.host === t.host);
  if (t.at === 'gate-start') return e.gate === t.gate && (t.host === undefined || e.host === t.host);
  return true;
}

/** Runs the row's run with its fault injected at its trigger; returns the run and when the clock started. */
async function runWithFault(row: FaultRow, how: Injection, env: FaultEnv, timeoutMs: number) {
  let clockFrom = 0;
  let injected: Promise<void> | undefined;
  if (row.trigger.at === 'before') {
    await how.inject(env);
    injected = Promise.resolve();
  }
  const r = await bootstrap(argsFor(row.args, env), {
    stateDir: env.stateDir,
    inventory: env.inventory,
    timeoutMs,
    onEvent: (e, child: ChildProcess) => {
      e.t = Date.now();
      if (row.trigger.at === 'before' && !clockFrom) clockFrom = e.t;
      if (!injected && isTrigger(row, e)) {
        // Frozen at the event while the fault goes in: it lands at this moment, not a little later.
        child.kill('SIGSTOP');
        injected = how.inject(env).finally(() => {
          clockFrom = Date.now();
          child.kill('SIGCONT');
        });
        injected.catch(() => undefined); // a failed injection fails the row where it is awaited, below
      }
    },
  });
  await injected;
  return { r, clockFrom, injected: injected !== undefined };
}

export interface FaultRowResult {
  stopped: BootstrapRun;
  rerun: Pick<BootstrapRun, 'code' | 'stdout' | 'stderr'>;
  /** The stopped run from its start to its stop event. */
  runMs: number;
  /** How long after the fault the stop came. */
  tookMs: number;
  healAndRerunMs: number;
}

/**
 * The row from its setup to the passing rerun. The heal runs also when an assertion failed, so the next
 * row starts from a healed lab.
 */
export async function runFaultRow(row: FaultRow, how: Injection, base: FaultEnv, opts: { timeoutMs?: number } = {}): Promise<FaultRowResult> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const env: FaultEnv = { ...base, inventory: how.inventory ? how.inventory(base) : base.inventory };
  let healed = false;
  try {
    await how.setup?.(env);
    const along = how.alongside?.(env);
    if (along) await along.started;
    const { r, clockFrom, injected } = await runWithFault(row, how, env, timeoutMs);
    expect(injected, 'the trigger event never came').toBe(true);
    expect(stopsOf(r), r.stdout.slice(-3000)).toContainEqual(expect.objectContaining({ cause: row.cause, ...(row.host === '-' ? {} : { host: row.host }) }));
    expect(r.code).not.toBe(0);
    const stopped = r.events.find((e) => e.type === 'stopped' && e.error.cause === row.cause);
    if (row.seen) expect(stopped.error.evidence?.seen).toMatch(row.seen);
    const gateStart = row.budgetFromGate ? (r.events.find((e) => e.type === 'gate-start' && e.gate === row.budgetFromGate)?.t ?? Infinity) : 0;
    const tookMs = stopped.t - Math.max(clockFrom, gateStart);
    expect(tookMs, `${row.cause} came ${tookMs} ms after the fault`).toBeLessThanOrEqual(row.budgetMs + 2_000);
    const tHeal = Date.now();
    await how.heal(env);
    healed = true;
    const rerunArgs = argsFor(row.rerunArgs ?? row.args.filter((a) => a !== '--resume'), env);
    const rerun = how.rerun ? await how.rerun(env, rerunArgs) : await bootstrap(rerunArgs, { ...env, timeoutMs });
    expect(rerun.code, rerun.stdout.slice(-3000) + rerun.stderr).toBe(0);
    const runMs = stopped.t - (r.events.find((e) => e.type === 'run-start')?.t ?? stopped.t);
    return { stopped: r, rerun, runMs, tookMs, healAndRerunMs: Date.now() - tHeal };
  } finally {
    if (!healed) await how.heal(env).catch(() => undefined);
  }
}
