// One host's part of a rolling change as ONE step: k3s's install steps (binary, images, config, unit,
// env, service) planned together, so the plan knows before anything changes whether k3s restarts. When it
// does on a running cluster, the plan puts first what must come before a restart: the check that the others
// hold quorum (reads only), the backup (the first restart of the run, unless --no-backup), the VIP handed over
// when this server holds it, the node cordoned and drained; then the install's own changes, ending in the
// restart. Check mode prints all of it in that order; apply performs exactly it. On a host that does not run
// k3s (a cold build, a server still to join) it plans nothing: k3s-founder, k3s-join and agents install there.
import type { Change } from '../../src/engine/changes.ts';
import type { ReadContext } from '../../src/engine/context.ts';
import type { FactsView, FactValue, HostFact, RunFact } from '../../src/engine/facts.ts';
import type { HostRef, Plan, ProbeCommand, ProbeResults, Step } from '../../src/engine/phase.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { backupAction } from '../../src/backup/take.ts';
import { unitRuns } from '../../src/k3s/unit-state.ts';
import { binaryChanged, configChanged, envChanged, unitChanged } from './facts.ts';
import { drainAction, quorumAction } from './rolling-drain.ts';
import { otherMember, rollingBackup, rollingOptions, rollingRestart, rollingView } from './rolling-facts.ts';

/** A facts view that sees the facts this composite's earlier sub-steps planned, before the engine records them. */
function overlay(base: FactsView, host: string, planned: Record<string, unknown>): FactsView {
  return {
    get: <T>(h: string, fact: HostFact<T>) => (h === host && fact.key in planned ? (planned[fact.key] as T) : base.get(h, fact)),
    run: <T>(fact: RunFact<T>) => base.run(fact),
    need: ((a: any, b?: any) => (typeof a === 'string' && a === host && b.key in planned ? planned[b.key] : base.need(a, b))) as FactsView['need'],
  };
}

const isRunning = (probe: ProbeResults, role: 'server' | 'agent') =>
  unitRuns(probe['active']?.stdout) && (role === 'agent' || probe['datastore']?.stdout.trim() === 'present');

/** Did an earlier host of this run's rolling change plan a restart (and so the backup)? */
function backupPlannedBefore(host: HostRef, ctx: ReadContext): boolean {
  return [...ctx.topology.servers, ...ctx.topology.agents].some((h) => h.name !== host.name && ctx.facts.get(h.name, rollingBackup) !== undefined);
}

/** The install steps of `inner` as one rolling step. */
export function rollingStep(inner: Step<any>[]): Step<unknown[]> {
  return {
    id: 'rolling',
    title: 'k3s changed one host at a time: drained, restarted, gated (a running cluster only)',
    // Each sub-step's probe under its index; the service step's `active` and the config step's `datastore` are
    // read here too, so they keep their own names as well.
    probe: (host, ctx) => {
      const out: Record<string, ProbeCommand> = {};
      inner.forEach((s, i) => {
        for (const [k, c] of Object.entries(s.probe?.(host, ctx) ?? {})) out[`${i}.${k}`] = c;
      });
      return out;
    },
    local: async (host, ctx) => Promise.all(inner.map((s) => (s.local ? s.local(host, ctx) : undefined))),
    plan: ({ host, probe, local, ctx }) => {
      const view = ctx.facts.run(rollingView);
      const sub = (i: number): ProbeResults =>
        Object.fromEntries(
          Object.entries(probe)
            .filter(([k]) => k.startsWith(`${i}.`))
            .map(([k, v]) => [k.slice(`${i}.`.length), v]),
        );
      const flat: ProbeResults = Object.assign({}, ...inner.map((_, i) => sub(i)));
      if (!view?.running || !isRunning(flat, host.role) || (host.role === 'server' && !view.members.includes(host.name))) return { changes: [] };
      const planned: Record<string, unknown> = {};
      const changes: Change[] = [];
      const facts: FactValue<'host'>[] = [];
      const secrets: string[] = [];
      for (const [i, step] of inner.entries()) {
        const p: Plan = step.plan({ host, probe: sub(i), local: local[i], ctx: { ...ctx, facts: overlay(ctx.facts, host.name, planned) } });
        if (p.stops?.length) return { changes: [], stops: p.stops };
        for (const f of p.facts ?? []) planned[f.key] = f.value;
        facts.push(...(p.facts ?? []));
        secrets.push(...(p.secrets ?? []));
        changes.push(...p.changes);
      }
      const restart = [binaryChanged, configChanged, unitChanged, envChanged].some((f) => planned[f.key] === true);
      if (!restart) return { changes, facts: [...facts, rollingRestart(false)], secrets };
      const before: Change[] = [quorumAction(host, ctx, view)];
      const options = ctx.facts.run(rollingOptions);
      const backup = options?.backup !== false && !backupPlannedBefore(host, ctx);
      if (backup && options) {
        // Through a server whose API serves: this one, or the first server when an agent restarts first.
        const via = host.role === 'server' ? host : otherMember(host, ctx, view);
        before.push(
          backupAction(
            { id: options.backupId, env: ctx.env, k3sVersion: '', snapshotServer: via.name, servers: serverRefs(ctx.inventory).map((s) => s.name) },
            ctx.stateDir,
            {
              description: `back up the cluster before the rolling change (backup ${options.backupId}; --no-backup skips it)`,
              ...(via !== host && { on: via.name }),
            },
          ),
        );
      }
      before.push(drainAction(host, ctx, view));
      return {
        changes: [...before, ...changes],
        facts: [...facts, rollingRestart(true), ...(backup && options ? [rollingBackup(options.backupId)] : [])],
        secrets,
      };
    },
  };
}
