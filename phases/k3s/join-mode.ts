// How a server's config says it joins: `cluster-init` (it starts the cluster) or `server: <url>` (it joins
// one). Decided by role on a fresh server; KEPT as it is once the server holds a datastore. A founder that
// was rebuilt with --replace joined a surviving server: its config says `server: …`, and a later run must
// neither render cluster-init for it (a second, separate cluster, had it no data) nor restart it to change
// a line k3s ignores once etcd has data ("Once db/etcd/member/wal exists, cluster-init and server are
// ignored", lab/TWIN.md). Survivors of a founder replace stay joined to the old founder's address for the
// same reason: that line only matters at a first join.
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { CONFIG_FILE, DB_DIR } from '../../src/k3s/paths.ts';
import { joinTargetOf } from './join-target.ts';
import { joinsThrough } from './facts.ts';

export type JoinKey = { 'cluster-init': true } | { server: string };

const joinProbes: Record<string, ProbeCommand> = {
  datastore: { command: `test -d ${DB_DIR}/etcd && echo present`, sudo: true },
  joinLine: { command: `grep -E '^(cluster-init|server):' ${CONFIG_FILE} 2>/dev/null`, sudo: true },
};

/** The join key by role: the (acting) founder starts the cluster, every other server joins `target` (join-target.ts). */
function joinKeyByRole(target: string, host: HostRef): JoinKey {
  return host.founder ? { 'cluster-init': true } : { server: target };
}

/** Pure: the key the server's config carries, from what the host has now. */
export function joinKeyFor(input: { replacing?: string; target: string; host: HostRef; datastore: string; joinLine: string }): JoinKey {
  const byRole = joinKeyByRole(input.target, input.host);
  // A server being replaced is wiped before it joins: what it holds now is what goes.
  if (input.replacing === input.host.name || input.datastore.trim() !== 'present') return byRole;
  const line = input.joinLine.trim().split('\n').at(-1) ?? '';
  const server = /^server:\s*["']?([^"'\s]+)/.exec(line);
  if (server) return { server: server[1] };
  if (/^cluster-init:\s*true/.test(line)) return { 'cluster-init': true };
  return byRole;
}

/** The config step, given the join key the host's current state calls for (servers only; agents as they are). */
export function joinAware<L extends { join?: JoinKey }>(step: Step<L>): Step<L> {
  return {
    ...step,
    probe: (host, ctx) => ({ ...step.probe?.(host, ctx), ...(host.role === 'server' ? joinProbes : {}) }),
    plan: (input) => {
      if (input.host.role !== 'server') return step.plan(input);
      const join = joinKeyFor({
        replacing: input.ctx.topology.replacing,
        target: joinTargetOf(input.ctx),
        host: input.host,
        datastore: input.probe.datastore?.stdout ?? '',
        joinLine: input.probe.joinLine?.stdout ?? '',
      });
      const plan = step.plan({ ...input, local: { ...input.local, join } });
      // A server still to join: its start's description names where it joins (the config is secret: no diff shows it).
      const fresh = input.ctx.topology.replacing === input.host.name || (input.probe.datastore?.stdout ?? '').trim() !== 'present';
      return fresh && 'server' in join ? { ...plan, facts: [...(plan.facts ?? []), joinsThrough(join.server)] } : plan;
    },
  };
}
