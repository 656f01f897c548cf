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
  /** Who starts etcd and who joins it in this run (modes/ decides it; the k3s phases read it). */
  topology: Topology;
}

/**
 * The servers' roles for the k3s phases of a run: who founds the cluster (cluster-init), who joins it and
 * through which address, and the server being replaced, if any. A mode decides it (modes/): the inventory's
 * roles on every run, but a replace of the founder, where the first other server founds for the k3s phases
 * and the rebuilt founder joins it (modes/replace.ts). Phases after k3s-join read the inventory's founder.
 */
export interface Topology {
  /** The server that starts the cluster, or that the joiners dial. */
  founder: HostRef;
  /** The other servers, in inventory order; they join one at a time. */
  joiners: HostRef[];
  /** Every server in inventory order (`founder` set on the founder of this topology). */
  servers: HostRef[];
  agents: HostRef[];
  /** The founder's API, where a joining server dials: https://<founder>:<port>. */
  joinTarget: string;
  /**
   * `--replace <server>`: that server's Node is deleted, its old state wiped and it joins again as a new
   * member (phases/k3s/replace-*.ts). Absent on every other run.
   */
  replacing?: string;
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
