// Everything a phase may use, passed in (no module-level state): the inventory, the connections,
// the clock, the event sink, check mode. Tests build one with fakes. Each hook gets only what it may use:
//   ReadContext    plan, preflight probe and check, probe builders: reads only (no host, no events)
//   LocalContext   local(): reads, and registers the secrets it reads
//   PrepareContext prepare: as local(), and run facts computed once a run (Facts.once)
//   RunContext     apply and gates: the hosts' connections and the event sink too
import type { LoadedInventory } from '../inventory/load.ts';
import type { Remote } from '../transport/types.ts';
import type { Clock } from './clock.ts';
import type { Emit } from './events.ts';
import type { Facts, FactsView, RunFact } from './facts.ts';
import type { HostRef } from './host-ref.ts';

export interface ReadContext {
  env: string;
  check: boolean;
  /** The loaded inventory and the values derived from it (src/inventory). */
  inventory: LoadedInventory;
  clock: Clock;
  signal: AbortSignal;
  /** The environment's state folder on the operator's machine (token, kubeconfig, journal, run logs). */
  stateDir: string;
  /** Facts recorded by plans, preflights and prepares (src/engine/facts.ts). */
  facts: FactsView;
  /**
   * `--replace <server>`: that server's Node is deleted, its old state wiped and it joins again as a new
   * member (phases/k3s/replace-*.ts). Absent on every other run.
   */
  replace?: string;
}

export interface LocalContext extends ReadContext {
  /** Registers a secret value so that no log or event ever shows it. */
  redact(secret: string): void;
}

export interface PrepareContext extends LocalContext {
  /** A run fact computed once a run, whichever phase asks first (src/engine/facts.ts Facts.once). */
  once<T>(fact: RunFact<T>, compute: () => Promise<T>): Promise<T>;
}

export interface RunContext extends PrepareContext {
  /** One connection per host, opened by the engine before the first phase. */
  remote(host: HostRef): Remote;
  emit: Emit;
}

/** The context the engine holds (src/engine/session.ts builds it): the run's facts store, which only it writes. */
export interface EngineContext extends RunContext {
  facts: Facts;
}

export type { LoadedInventory };
