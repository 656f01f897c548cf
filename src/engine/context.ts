// Everything a phase may use, passed in (no module-level state): the inventory, the connections,
// the clock, the event sink, check mode. Tests build one with fakes. Each hook gets only what it may use:
//   ReadContext    plan, preflight probe and check, probe builders: reads only (no host, no events);
//                  the run's Topology (modes/) is read here too
//   LocalContext   local(): reads, and registers the secrets it reads
//   PrepareContext prepare: as local(), and run facts computed once a run (Facts.once)
//   RunContext     apply and gates: the hosts' connections and the event sink too
import type { LoadedInventory } from '../inventory/load.ts';
import type { CommandLog, Remote } from '../transport/types.ts';
import type { Clock } from './clock.ts';
import type { Emit } from './events.ts';
import type { Facts, FactsView, RunFact } from './facts.ts';
import type { HostRef } from './host-ref.ts';
import type { InFlight } from './in-flight.ts';
import type { ProbeMemo } from './probe-memo.ts';
import type { ApiReads, ProbeResult } from './probe-types.ts';

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
  /**
   * `--remove <names>`: the nodes leaving the cluster, in the order they go (agents, then servers, the founder
   * last among them); phases/k3s-remove.ts. Absent on every other run.
   */
  removing?: string[];
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
  /** The probes' answers the run may reuse (src/engine/probe-memo.ts); absent: every probe is asked. */
  probeMemo?: ProbeMemo;
  /** Answers probes that read the API (ProbeCommand.api) without a process on the host; absent: they run on it. */
  apiGet?: ApiGet;
  /**
   * The run log, for what the run does that is no remote command: a request to the Kubernetes API through a
   * host's SSH connection is recorded there as the command it stands for would be (src/kube/api-read.ts).
   */
  log?: CommandLog;
  /** The remote commands started and not yet ended: what a gate past its budget names (src/engine/in-flight.ts). */
  inFlight?: InFlight;
}

/**
 * A GET of `read` (a path) at the API on `host` (a server) through the run's SSH connection to it, answered as
 * `k3s kubectl get --raw <path>` on the host answers (exit 0 and the body; exit 1 and kubectl's
 * `Error from server (<reason>): <message>`); or the GETs of ApiReads, answered as its `print` says (a refusal
 * of any: exit 1 and kubectl's words). Undefined when the run cannot ask that way (no admin kubeconfig in the
 * state folder) or no answer came (nothing listening, a certificate of another cluster): the probe's command
 * is then run on the host. `label` names the probe in the run log.
 */
export type ApiGet = (host: HostRef, read: string | ApiReads, o: { timeoutMs: number; label?: string }) => Promise<ProbeResult | undefined>;

/** The context the engine holds (src/engine/session.ts builds it): the run's facts store, which only it writes. */
export interface EngineContext extends RunContext {
  facts: Facts;
}

export type { LoadedInventory };
