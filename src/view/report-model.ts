// The run report's model: the engine's events, each stamped with when it arrived, folded into one row per
// phase and host with its steps, gates and actions as spans of time, and the stops placed on the row they
// stopped. Events carry durations but no start times, so the time of arrival is what places a bar.
import type { EngineEvent, RunSummary } from '../engine/events.ts';
import type { CauseError } from '../errors.ts';

export interface TimedEvent {
  /** Milliseconds on the run's clock when the event was emitted. */
  at: number;
  event: EngineEvent;
}

export type StopJson = ReturnType<CauseError['toJSON']>;

type ItemStatus = 'ok' | 'changed' | 'would-change' | 'skipped' | 'would-wait' | 'failed' | 'unfinished';

export interface Item {
  kind: 'step' | 'gate' | 'action' | 'check' | 'waived';
  id: string;
  title: string;
  /** Milliseconds from the run's start. */
  start: number;
  end: number;
  status: ItemStatus;
  budgetMs?: number;
  /** Changes a step made (or would make), check details, a waiver's reason. */
  notes: string[];
  open: boolean;
}

export interface Row {
  phase: string;
  phaseTitle: string;
  host: string;
  items: Item[];
  stops: { at: number; stop: StopJson }[];
}

export interface ReportModel {
  env: string;
  check: boolean;
  /** The run's clock at its start (epoch milliseconds on the system clock). */
  startedAt: number;
  /** Milliseconds from the first event to the last: the timeline's width. */
  spanMs: number;
  phases: { id: string; title: string; ran: boolean; status?: 'done' | 'stopped'; durationMs?: number }[];
  rows: Row[];
  /** Stops no row holds: before any host was dialled, or of a host the stopped phase does not run on. */
  runStops: StopJson[];
  warnings: string[];
  waivers: { cause: string; reason: string }[];
  summary?: RunSummary;
  logFile?: string;
}

export function buildModel(events: TimedEvent[]): ReportModel {
  const origin = events[0]?.at ?? 0;
  const m: ReportModel = { env: '', check: false, startedAt: origin, spanMs: 1, phases: [], rows: [], runStops: [], warnings: [], waivers: [] };
  const rows = new Map<string, Row>();
  const key = (phase: string, host: string) => `${phase}\u0000${host}`;
  const phaseOf = (id: string) => m.phases.find((p) => p.id === id);
  let current: string | undefined;

  const add = (e: { phase: string; host: string }, fields: Omit<Item, 'notes' | 'open'> & Partial<Item>): Item => {
    const row = rows.get(key(e.phase, e.host)) ?? newRow(e.phase, e.host);
    const item: Item = { notes: [], open: false, ...fields };
    row.items.push(item);
    return item;
  };
  const newRow = (phase: string, host: string): Row => {
    const row: Row = { phase, phaseTitle: phaseOf(phase)?.title ?? phase, host, items: [], stops: [] };
    rows.set(key(phase, host), row);
    m.rows.push(row);
    return row;
  };
  /** The latest open item of that kind and id on the event's row: the one this end closes. */
  const openItem = (e: { phase: string; host: string }, kind: Item['kind'], id: string) =>
    rows
      .get(key(e.phase, e.host))
      ?.items.filter((i) => i.open && i.kind === kind && i.id === id)
      .pop();
  const close = (e: { phase: string; host: string }, kind: Item['kind'], id: string, t: number, status: ItemStatus) => {
    const item = openItem(e, kind, id);
    if (item) Object.assign(item, { end: t, status, open: false });
    return item;
  };
  // What was still running when its phase or the run ended: failed where a stop names the host, else cut short.
  const closeOpen = (selected: Row[], t: number) => {
    for (const row of selected)
      for (const item of row.items.filter((i) => i.open)) Object.assign(item, { end: t, open: false, status: row.stops.length ? 'failed' : 'unfinished' });
  };

  for (const { at, event: e } of events) {
    const t = at - origin;
    m.spanMs = Math.max(m.spanMs, t);
    switch (e.type) {
      case 'run-start':
        Object.assign(m, { env: e.env, check: e.check, waivers: e.waivers });
        m.phases = e.phases.map((id) => ({ id, title: id, ran: false }));
        break;
      case 'phase-start': {
        const p = phaseOf(e.phase) ?? (m.phases.push({ id: e.phase, title: e.title, ran: true }), phaseOf(e.phase)!);
        Object.assign(p, { title: e.title, ran: true });
        current = e.phase;
        for (const host of e.hosts) if (!rows.has(key(e.phase, host))) newRow(e.phase, host);
        for (const row of m.rows.filter((r) => r.phase === e.phase)) row.phaseTitle = e.title;
        break;
      }
      case 'step-start':
        add(e, { kind: 'step', id: e.step, title: e.title, start: t, end: t, status: 'unfinished', open: true });
        break;
      case 'step-end': {
        // A skipped step (done in the resumed run) ends without having started.
        const item =
          close(e, 'step', e.step, t, e.status) ?? add(e, { kind: 'step', id: e.step, title: e.title, start: t - e.durationMs, end: t, status: e.status });
        item.notes = e.changes.map((c) => `${e.status === 'would-change' ? 'would ' : ''}${c.summary}`);
        break;
      }
      case 'gate-start':
        add(e, { kind: 'gate', id: e.gate, title: e.title, start: t, end: t, status: 'unfinished', budgetMs: e.budgetMs, open: true });
        break;
      case 'gate-end':
        if (!close(e, 'gate', e.gate, t, e.status)) add(e, { kind: 'gate', id: e.gate, title: e.title, start: t - e.durationMs, end: t, status: e.status });
        break;
      case 'action-start':
        add(e, {
          kind: 'action',
          id: `${e.step}\u0000${e.description}`,
          title: e.description,
          start: t,
          end: t,
          status: 'unfinished',
          budgetMs: e.budgetMs,
          open: true,
        });
        break;
      case 'action-end':
        close(e, 'action', `${e.step}\u0000${e.description}`, t, e.status);
        break;
      case 'check':
        add(e, { kind: 'check', id: e.check, title: e.title, start: t, end: t, status: e.ok ? 'ok' : 'failed', notes: e.detail ? [e.detail] : [] });
        break;
      case 'waived':
        add(e, { kind: 'waived', id: e.cause, title: e.cause, start: t, end: t, status: 'ok', notes: [e.reason] });
        break;
      case 'warning':
        m.warnings.push(e.host ? `${e.host}: ${e.message}` : e.message);
        break;
      case 'phase-end': {
        Object.assign(phaseOf(e.phase) ?? {}, { status: e.status, durationMs: e.durationMs });
        closeOpen(
          m.rows.filter((r) => r.phase === e.phase),
          t,
        );
        break;
      }
      case 'stopped': {
        // A stop belongs to the phase that was running (or ended stopped) when it came, on its host.
        const running = current && phaseOf(current)?.status !== 'done' ? current : undefined;
        const row = running && e.error.host ? rows.get(key(running, e.error.host)) : undefined;
        if (row) {
          row.stops.push({ at: t, stop: e.error });
          for (const item of row.items) if (item.status === 'unfinished') item.status = 'failed';
        } else m.runStops.push(e.error);
        break;
      }
      case 'run-end':
        m.summary = e.summary;
        m.logFile = e.logFile;
        closeOpen(m.rows, t);
        break;
      default:
        break;
    }
  }
  closeOpen(m.rows, m.spanMs);
  return m;
}
