// Every selected phase's probes asked when the run starts, before each phase's turn: per phase and host one
// remote execution (two when some need sudo), their answers kept in the run's probe memo
// (src/engine/probe-memo.ts). A converged run then waits for no probe of its own: each phase finds its answers
// asked while the phases before it ran, and only its gates go to the hosts. A run that changes something
// forgets them at its first change and probes live from there, as it always did.
//
// A probe is built here from what the run knows at its start: one that depends on a fact an earlier phase
// records is asked again by its phase when its command comes out different then (the memo is keyed by the
// command). A phase or probe that cannot be built yet is left to its phase, and so is any failure here (a
// host that does not answer, a batch over its budget): the phase that needs the answer names the cause.
import type { EngineContext } from './context.ts';
import type { HostRef, Phase, ProbeCommand } from './phase.ts';
import { probeIdentity } from './probe-memo.ts';
import { runProbes } from './probes.ts';

/**
 * The budget of a batch asked ahead. Shorter than a phase's probe budget: a probe that hangs must not hold its
 * phase long before the phase asks again and names it.
 */
const PREFETCH_BUDGET_MS = 15_000;

/** Per phase, each host's probes not asked by an earlier phase (keyed by how they run), in the phases' order. */
function probesAhead(phases: Phase[], ctx: EngineContext): { host: HostRef; commands: [string, ProbeCommand][] }[] {
  const seen = new Map<string, Set<string>>();
  const groups: { host: HostRef; commands: [string, ProbeCommand][] }[] = [];
  for (const phase of phases) {
    const byHost = new Map<string, { host: HostRef; commands: [string, ProbeCommand][] }>();
    // Named in the run log as the phase would name it, after the phase: `<phase>.<step index>.<key>`, `<phase>.pre.<key>`.
    const add = (label: string, host: HostRef, build: () => Record<string, ProbeCommand> | undefined) => {
      let built: Record<string, ProbeCommand> | undefined;
      try {
        built = build();
      } catch {
        return;
      }
      const asked = seen.get(host.name) ?? new Set<string>();
      seen.set(host.name, asked);
      const group = byHost.get(host.name) ?? { host, commands: [] };
      byHost.set(host.name, group);
      for (const [name, cmd] of Object.entries(built ?? {})) {
        const key = probeIdentity(cmd);
        if (asked.has(key)) continue;
        asked.add(key);
        group.commands.push([`${label}.${name}`, cmd]);
      }
    };
    let hosts: HostRef[];
    try {
      hosts = phase.hosts(ctx);
    } catch {
      continue;
    }
    const preflight = phase.preflight;
    if (preflight) {
      let targets: HostRef[] = [];
      try {
        targets = preflight.hosts?.(ctx) ?? hosts;
      } catch {
        // left to the phase
      }
      for (const host of targets) add(`${phase.id}.pre`, host, () => preflight.probe(host, ctx));
    }
    for (const host of hosts) {
      phase.steps.forEach((step, i) => add(`${phase.id}.${i}`, host, () => step.probe?.(host, ctx)));
      (phase.afterGates ?? []).forEach((step, i) => add(`${phase.id}.after${i}`, host, () => step.probe?.(host, ctx)));
    }
    groups.push(...[...byHost.values()].filter((g) => g.commands.length));
  }
  return groups;
}

/**
 * Sends every phase's probes on every host, a batch per phase and host (the connection's channel limit
 * bounds how many run at once), and returns without waiting: a phase that needs an answer still on its way
 * waits for it (ProbeMemo.find), so the first phases start at once and a slow read of a later phase
 * (a `k3s kubectl` on a busy server) holds up only that phase. Never stops the run.
 */
export function prefetchProbes(phases: Phase[], ctx: EngineContext): void {
  if (!ctx.probeMemo) return;
  for (const { host, commands } of probesAhead(phases, ctx)) void runProbes(host, ctx, commands, { timeoutMs: PREFETCH_BUDGET_MS }).catch(() => undefined);
}
