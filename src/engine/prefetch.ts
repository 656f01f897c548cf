// Every selected phase's probes asked when the run starts, before each phase's turn: per host one remote
// execution for all of them (two when some need sudo), their answers kept in the run's probe memo
// (src/engine/probe-memo.ts). A converged run then waits for no probe of its own: each phase finds its answers
// asked while the phases before it ran, and only its gates go to the hosts. A run that changes something
// forgets them at its first change and probes live from there, as it always did.
//
// A probe is built here from what the run knows at its start: one that depends on a fact an earlier phase
// records is asked again by its phase when its command comes out different then (the memo is keyed by the
// command). A phase or probe that cannot be built yet is left to its phase, and so is any failure here (a
// host that does not answer, a batch over its budget): the phase that needs the answer names the cause.
import type { EngineContext } from './context.ts';
import { stepProbes, type HostRef, type Phase, type ProbeCommand, type ProbeResults } from './phase.ts';
import { probeIdentity } from './probe-memo.ts';
import { runProbes } from './probes.ts';

/**
 * The budget of a batch asked ahead. Shorter than a phase's probe budget: a probe that hangs must not hold its
 * phase long before the phase asks again and names it.
 */
const PREFETCH_BUDGET_MS = 15_000;

/** Each host's probes of every phase, each asked once (keyed by how it runs), in the phases' order. */
function probesAhead(phases: Phase[], ctx: EngineContext): { host: HostRef; commands: [string, ProbeCommand][] }[] {
  const seen = new Map<string, Set<string>>();
  const byHost = new Map<string, { host: HostRef; commands: [string, ProbeCommand][] }>();
  for (const phase of phases) {
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
      phase.steps.forEach((step, i) => add(`${phase.id}.${i}`, host, () => stepProbes(step, host, ctx)));
      (phase.afterGates ?? []).forEach((step, i) => add(`${phase.id}.after${i}`, host, () => stepProbes(step, host, ctx)));
    }
  }
  return [...byHost.values()].filter((g) => g.commands.length);
}

/**
 * Sends every phase's probes on every host, all of a host's in one batch (one more for those through sudo),
 * and returns without waiting: a phase that needs an answer still on its way waits for it (ProbeMemo.find).
 * One batch per host, not one per phase and host: each remote execution costs the host a session process, a
 * shell, sudo (PAM, its log line) and the batch's scratch dir, which on a small host costs more than the
 * probes themselves (measured on the lab, 3 servers + 1 agent: a converged run's CPU 14.8 → 11.8 s, `--check`
 * 9.2 → 6.8 s). The reads that wait on something slow (the API) are not in it: they go through the API beside
 * the batch (src/engine/probes.ts probeBatch). Never stops the run. Resolves, per host, with the answers
 * (undefined: none came).
 */
export function prefetchProbes(
  phases: Phase[],
  ctx: EngineContext,
  o: { lead?: (sudo: boolean) => [string, ProbeCommand] } = {},
): Map<string, Promise<ProbeResults | undefined>> {
  const answers = new Map<string, Promise<ProbeResults | undefined>>();
  if (!ctx.probeMemo) return answers;
  for (const { host, commands } of probesAhead(phases, ctx)) {
    // `lead` first in each batch: the one as the user and, when there is one, the one through sudo.
    const lead = o.lead ? [o.lead(false), ...(commands.some(([, c]) => c.sudo) ? [o.lead(true)] : [])] : [];
    answers.set(
      host.name,
      runProbes(host, ctx, [...lead, ...commands], { timeoutMs: PREFETCH_BUDGET_MS }).catch(() => undefined),
    );
  }
  // The gates' reads that can go now too (verify's looks: each host's Cilium agent, etcd's members): beside
  // the probes they cost the hosts what they would cost later, and a converged run then waits for neither.
  for (const phase of phases) {
    if (!phase.lookAhead || (ctx.check && !(phase.gates ?? []).every((g) => g.readOnly))) continue;
    try {
      phase.lookAhead(ctx);
    } catch {
      // left to the gates, which read in their turn
    }
  }
  return answers;
}
