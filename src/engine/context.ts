// Everything a phase may use, passed in (no module-level state): the inventory, the connections,
// the clock, the event sink, check mode. Tests build one with fakes.
import type { LoadedInventory } from '../inventory/load.ts';
import type { Remote } from '../transport/types.ts';
import type { Clock } from './clock.ts';
import type { Emit } from './events.ts';
import type { HostRef } from './host-ref.ts';

export interface RunContext {
  env: string;
  check: boolean;
  /** The loaded inventory and the values derived from it (src/inventory). */
  inventory: LoadedInventory;
  /** One connection per host, opened by the engine before the first phase. */
  remote(host: HostRef): Remote;
  clock: Clock;
  emit: Emit;
  signal: AbortSignal;
  /** The environment's state folder on the operator's machine (token, kubeconfig, journal, run logs). */
  stateDir: string;
  /** Facts a step's plan recorded, readable by later steps and gates: facts.get(host, key). */
  facts: Facts;
  /** Registers a secret value so that no log or event ever shows it. */
  redact(secret: string): void;
  /**
   * `--replace <server>`: that server's Node is deleted, its old state wiped and it joins again as a new
   * member (phases/k3s/replace-*.ts). Absent on every other run.
   */
  replace?: string;
}

export class Facts {
  private readonly byHost = new Map<string, Record<string, unknown>>();
  set(host: string, values: Record<string, unknown>): void {
    this.byHost.set(host, { ...this.byHost.get(host), ...values });
  }
  get<T = unknown>(host: string, key: string): T | undefined {
    return this.byHost.get(host)?.[key] as T | undefined;
  }
}

export type { LoadedInventory };
