// Where a server that holds no datastore yet joins: a LIVE server of the cluster, never the founder by name
// (it may be down, or removed). On a cold build (no server holds a datastore) that is the founder, as the
// inventory says; on a running cluster the first server in inventory order that holds a datastore and whose
// API answers /readyz. Decided read-only by k3s-join's preflight (check mode too) as a run fact; the
// joiner's config shows it (`server: https://<it>:<port>`) and its voter gate reads the cluster through it.
// A server that already holds a datastore keeps its config's join line whatever this says (join-mode.ts).
import type { ReadContext } from '../../src/engine/context.ts';
import { runFact } from '../../src/engine/facts.ts';
import type { HostRef, ProbeCommand, ProbeResults } from '../../src/engine/phase.ts';
import { DB_DIR, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { rawGetProbe } from '../../src/k3s/remote.ts';

export interface JoinVia {
  /** The server joiners dial, by its inventory name. */
  name: string;
  url: string;
  /** Why it was chosen, for the plan and the evidence. */
  why: string;
}

/** The join target of this run, set by k3s-join's preflight; absent before it ran (then the topology's). */
const joinVia = runFact<JoinVia>('k3s-join.via');

/** On each server: `present` when it holds etcd data (the same probe as the other phases', asked once a run). */
const DATASTORE_PROBE: ProbeCommand = { command: `test -d ${DB_DIR}/etcd && echo present`, sudo: true };

/**
 * And its API's /readyz (`ok`): a GET through the run's connection to it when the run can; on the server, asked
 * only where a datastore is and k3s runs, so a server still to join starts no k3s process.
 */
const READYZ_PROBE = rawGetProbe('/readyz', { onlyIf: `test -d ${DB_DIR}/etcd && systemctl is-active -q ${SERVER_ROLE.unit}` });

export interface ServerState {
  name: string;
  address: string;
  datastore: boolean;
  ready: boolean;
}

/** What one server's probes saw: its datastore, and /readyz answering `ok` (only a holder's counts). */
export function serverState(host: HostRef, r: ProbeResults): ServerState {
  const datastore = r.datastore?.stdout.trim() === 'present';
  return { name: host.name, address: host.address, datastore, ready: datastore && r.readyz?.code === 0 && r.readyz.stdout.trim() === 'ok' };
}

/**
 * Pure: the founder on a cold build; else the first server (inventory order) that holds a datastore and
 * answers, never `excluded` (a server being replaced: it is wiped before it joins). With none answering, the
 * first that holds a datastore (the joiner's gate then names why it cannot join).
 */
export function chooseJoinTarget(servers: ServerState[], founder: HostRef, port: number, excluded?: string): JoinVia {
  const url = (address: string) => `https://${address}:${port}`;
  const holders = servers.filter((s) => s.datastore && s.name !== excluded);
  if (!holders.length)
    return { name: founder.name, url: url(founder.address), why: 'a cold build: no server holds a datastore yet, the founder starts the cluster' };
  const live = holders.find((s) => s.ready);
  if (live) return { name: live.name, url: url(live.address), why: `the first server that holds a datastore and whose API answers /readyz` };
  const first = holders[0];
  return { name: first.name, url: url(first.address), why: `no server's API answered /readyz; the first that holds a datastore` };
}

/** The address a server without a datastore joins in this run. */
export function joinTargetOf(ctx: Pick<ReadContext, 'facts' | 'topology'>): string {
  return ctx.facts.run(joinVia)?.url ?? ctx.topology.joinTarget;
}

/** The server whose API a joiner's gate reads: the join target, else the (acting) founder. */
export function joinViaHost(ctx: Pick<ReadContext, 'facts' | 'topology'>): HostRef {
  const name = ctx.facts.run(joinVia)?.name;
  return ctx.topology.servers.find((s) => s.name === name) ?? ctx.topology.founder;
}

/** k3s-join's preflight: every server probed, the join target decided. */
export const joinTargetPreflight = {
  hosts: (c: Pick<ReadContext, 'topology'>) => c.topology.servers,
  probe: () => ({ datastore: DATASTORE_PROBE, readyz: READYZ_PROBE }),
  // A server that does not answer SSH is no join target (a dead founder among them): judged without it.
  mayBeDown: true,
  check: (seen: Map<HostRef, ProbeResults>, ctx: ReadContext) => {
    const states = [...seen].map(([h, r]) => serverState(h, r));
    return { stops: [], facts: [joinVia(chooseJoinTarget(states, ctx.topology.founder, ctx.inventory.derived.apiEndpoint.port, ctx.topology.replacing))] };
  },
};
