// The phases form a DAG through `needs`. It is validated at start: an unknown need, a cycle or a
// duplicate id is a bug in the phase list, not an operator error, so it throws DagInvalid.
import { UsageError } from '../errors.ts';
import type { Phase } from './phase.ts';

export class DagInvalid extends Error {
  constructor(readonly problems: string[]) {
    super(`phase DAG invalid: ${problems.join('; ')}`);
    this.name = 'DagInvalid';
  }
}

/** The phases in an order that respects `needs` (stable: ties keep the list's order). */
export function orderPhases(phases: Phase[]): Phase[] {
  const problems: string[] = [];
  const byId = new Map<string, Phase>();
  for (const p of phases) {
    if (byId.has(p.id)) problems.push(`duplicate phase id ${p.id}`);
    byId.set(p.id, p);
  }
  for (const p of phases) {
    for (const n of p.needs) if (!byId.has(n)) problems.push(`${p.id} needs unknown phase ${n}`);
  }
  if (problems.length) throw new DagInvalid(problems);

  const ordered: Phase[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (p: Phase, path: string[]) => {
    if (state.get(p.id) === 'done') return;
    if (state.get(p.id) === 'visiting') {
      problems.push(`cycle ${[...path, p.id].join(' → ')}`);
      return;
    }
    state.set(p.id, 'visiting');
    for (const n of p.needs) visit(byId.get(n)!, [...path, p.id]);
    state.set(p.id, 'done');
    ordered.push(p);
  };
  for (const p of phases) visit(p, []);
  if (problems.length) throw new DagInvalid(problems);
  return ordered;
}

/** Every phase `id` depends on, directly or not. */
function ancestors(phases: Phase[], id: string): Set<string> {
  const byId = new Map(phases.map((p) => [p.id, p]));
  const seen = new Set<string>();
  const walk = (x: string) => {
    for (const n of byId.get(x)?.needs ?? []) {
      if (!seen.has(n)) {
        seen.add(n);
        walk(n);
      }
    }
  };
  walk(id);
  return seen;
}

/**
 * Asserts that `before` comes before `after` through the DAG's edges (not by list order).
 * The engine uses this for orderings that safety depends on, e.g. kube-vip before cilium
 * (the 2026-09-01 deadlock): removing the edge must make the DAG invalid, not silently reorder.
 */
export function requireEdge(phases: Phase[], before: string, after: string): void {
  const present = new Set(phases.map((p) => p.id));
  if (!present.has(before) || !present.has(after)) return;
  if (!ancestors(phases, after).has(before)) {
    throw new DagInvalid([`${after} must depend on ${before}`]);
  }
}

export interface Selection {
  from?: string;
  only?: string;
  until?: string;
}

/** The phases a run executes, in order, after --from/--only/--until. Unknown ids are usage errors. */
export function selectPhases(ordered: Phase[], sel: Selection): Phase[] {
  const ids = ordered.map((p) => p.id);
  for (const [flag, id] of Object.entries(sel)) {
    if (id !== undefined && !ids.includes(id)) {
      throw new UsageError(`--${flag} ${id}: no such phase (phases: ${ids.join(', ')})`);
    }
  }
  if (sel.only && (sel.from || sel.until)) throw new UsageError('--only cannot be combined with --from or --until');
  if (sel.only) return ordered.filter((p) => p.id === sel.only);
  const start = sel.from ? ids.indexOf(sel.from) : 0;
  const end = sel.until ? ids.indexOf(sel.until) : ids.length - 1;
  if (end < start) throw new UsageError(`--until ${sel.until} comes before --from ${sel.from}`);
  return ordered.slice(start, end + 1);
}
