// A phase counted from its events, for the one line the views print per phase in check mode: a check on a
// built cluster says what differs and, for the rest, "node-baseline  ok: 4 hosts, 12 steps, nothing would change"
// instead of a line per step that would change nothing.
import type { EngineEvent } from '../engine/events.ts';

export interface Tally {
  title: string;
  hosts: number;
  steps: number;
  ok: number;
  wouldChange: number;
  gatesPassed: number;
  /** Gates a check run does not run (they wait for changes it does not make). */
  wouldWait: number;
}

export class PhaseTally {
  private readonly phases = new Map<string, Tally>();

  /** Counts `e` into its phase's tally; returns that tally (undefined for events outside a phase). */
  see(e: EngineEvent): Tally | undefined {
    if (e.type === 'phase-start') {
      const t = { title: e.title, hosts: e.hosts.length, steps: 0, ok: 0, wouldChange: 0, gatesPassed: 0, wouldWait: 0 };
      this.phases.set(e.phase, t);
      return t;
    }
    if (!('phase' in e)) return undefined;
    const t = this.phases.get(e.phase);
    if (!t) return undefined;
    if (e.type === 'step-end') {
      t.steps++;
      if (e.status === 'would-change') t.wouldChange++;
      else t.ok++;
    } else if (e.type === 'gate-end') {
      if (e.status === 'ok') t.gatesPassed++;
      else if (e.status === 'would-wait') t.wouldWait++;
    }
    return t;
  }

  get(phase: string): Tally | undefined {
    return this.phases.get(phase);
  }
}

/**
 * "node-baseline  ok: 4 hosts, 12 steps, nothing would change" or "k3s-founder  3 would change, 5 ok: 1 host,
 * 8 steps, 1 gate would wait (not run in check mode)".
 */
export function checkLine(phase: string, t: Tally): string {
  const parts = [plural(t.hosts, 'host'), plural(t.steps, 'step')];
  if (t.gatesPassed) parts.push(`${plural(t.gatesPassed, 'gate')} passed`);
  if (t.wouldWait) parts.push(`${plural(t.wouldWait, 'gate')} would wait (not run in check mode)`);
  if (!t.wouldChange) return `${phase}  ok: ${parts.join(', ')}, nothing would change`;
  return `${phase}  ${t.wouldChange} would change, ${t.ok} ok: ${parts.join(', ')}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
