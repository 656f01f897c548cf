// Facts: what a step's plan, a preflight or a prepare learnt, for later steps and gates to read. Each key
// is declared once, with its type and its scope:
//   - a host fact belongs to one host, is set by that host's plans and kept in the run's journal (a
//     resumed run still sees it), so its value is plain JSON;
//   - a run fact is run-wide (a prepare's value, a preflight's verdict across hosts), computed again by
//     every run, resumed or not, and never written to the journal.
//   const journalCursor = hostFact<string>('journalCursor');
//   plan → { changes, facts: [journalCursor(cursor)] };   gate → ctx.facts.get(host.name, journalCursor)
// A read returns `T | undefined`: each reader says what absence means where it reads. A run fact that the
// engine guarantees (a selected phase's prepare ran before any step) is read with `need`, which names the
// missing key as a bug instead of reading into undefined.

/** What a host fact may hold: the journal stores it as JSON. */
export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json | undefined };

export type FactScope = 'host' | 'run';

/** A fact with its value, as a plan (host) or a prepare or preflight (run) returns it. */
export interface FactValue<S extends FactScope = FactScope> {
  readonly key: string;
  readonly scope: S;
  readonly value: unknown;
}

/** A declared key: call it with a value to record that value (`journalCursor('s=…')`). */
export interface FactKey<T, S extends FactScope> {
  (value: T): FactValue<S>;
  readonly key: string;
  readonly scope: S;
  /** Never set: carries the value's type. */
  readonly valueType?: T;
}

export type HostFact<T> = FactKey<T, 'host'>;
export type RunFact<T> = FactKey<T, 'run'>;

function declare<T, S extends FactScope>(key: string, scope: S): FactKey<T, S> {
  const fact = (value: T): FactValue<S> => ({ key, scope, value });
  return Object.assign(fact, { key, scope }) as FactKey<T, S>;
}

/** A fact of one host, kept in the journal (hence JSON). */
export const hostFact = <T extends Json | undefined>(key: string): HostFact<T> => declare<T, 'host'>(key, 'host');

/** A run-wide fact (not journaled: every run computes it again). */
export const runFact = <T>(key: string): RunFact<T> => declare<T, 'run'>(key, 'run');

/** What hooks read: no hook but the engine writes facts (plans, preflights and prepares return them). */
export interface FactsView {
  get<T>(host: string, fact: HostFact<T>): T | undefined;
  run<T>(fact: RunFact<T>): T | undefined;
  /**
   * A fact the engine guarantees is there, so that absence is a bug: a run fact a selected phase's prepare
   * or preflight sets, a host fact an earlier hook of the same step set (its plan, read by its apply).
   */
  need<T>(fact: RunFact<T>): T;
  need<T>(host: string, fact: HostFact<T>): T;
}

/** The run's facts (one per run). */
export class Facts implements FactsView {
  private readonly byHost = new Map<string, Record<string, unknown>>();
  private readonly runWide = new Map<string, unknown>();
  private readonly computing = new Map<string, Promise<unknown>>();

  get<T>(host: string, fact: HostFact<T>): T | undefined {
    return this.byHost.get(host)?.[fact.key] as T | undefined;
  }

  run<T>(fact: RunFact<T>): T | undefined {
    return this.runWide.get(fact.key) as T | undefined;
  }

  need<T>(fact: RunFact<T>): T;
  need<T>(host: string, fact: HostFact<T>): T;
  need<T>(a: RunFact<T> | string, b?: HostFact<T>): T {
    if (typeof a === 'string') {
      const facts = this.byHost.get(a);
      if (!facts || !(b!.key in facts)) throw new Error(`host fact ${b!.key} of ${a} was read before it was set`);
      return facts[b!.key] as T;
    }
    if (!this.runWide.has(a.key)) throw new Error(`run fact ${a.key} was read before it was set (its phase's prepare or preflight did not run)`);
    return this.runWide.get(a.key) as T;
  }

  /** Records a host's facts (a plan's). */
  setHost(host: string, values: readonly FactValue<'host'>[]): void {
    this.setHostRecord(host, hostRecord(values));
  }

  /** A host's facts as the journal keeps them (by key), e.g. those of a completed phase on resume. */
  setHostRecord(host: string, record: Record<string, unknown>): void {
    this.byHost.set(host, { ...this.byHost.get(host), ...record });
  }

  setRun(values: readonly FactValue<'run'>[]): void {
    for (const v of values) this.runWide.set(v.key, v.value);
  }

  /**
   * A run fact computed once a run, by whichever prepare asks first (the others wait for the same
   * computation): e.g. Cilium's values, which the cilium and flux phases both need. A computation that
   * throws throws the same error to every caller.
   */
  once<T>(fact: RunFact<T>, compute: () => Promise<T>): Promise<T> {
    let pending = this.computing.get(fact.key) as Promise<T> | undefined;
    if (!pending) {
      pending = compute().then((value) => {
        this.runWide.set(fact.key, value);
        return value;
      });
      this.computing.set(fact.key, pending);
    }
    return pending;
  }
}

/** Host facts as a JSON record by key (what the journal stores). */
export function hostRecord(values: readonly FactValue<'host'>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of values) out[v.key] = v.value;
  return out;
}
