// The plain renderer: one line per event that matters, for CI logs and pipes (no cursor tricks). In check
// mode a phase shows only what differs (the steps that would change, with their changes, and then its
// gates) and one line of counts; a phase with nothing to change is that one line.
import type { EngineEvent } from '../engine/events.ts';
import { summaryLine } from '../engine/events.ts';
import { formatDuration, formatStop, indentBlock, transferLine } from './format.ts';
import { checkLine, PhaseTally } from './phase-tally.ts';

export function plainRenderer(write: (line: string) => void): (e: EngineEvent) => void {
  const line = eventLines(write);
  let check = false;
  const tally = new PhaseTally();
  /** Per phase in check mode: its header once written, and the gates held back until the phase differs. */
  const held = new Map<string, { header?: string; waits: EngineEvent[] }>();

  /** Writes the phase's header if not yet written (and, once the phase differs, the gates held back). */
  const show = (phase: string) => {
    const h = held.get(phase);
    if (!h) return;
    if (h.header) write(h.header);
    h.header = undefined;
    if (tally.get(phase)?.wouldChange) for (const w of h.waits.splice(0)) line(w);
  };

  return (e) => {
    if (e.type === 'run-start') check = e.check;
    if (!check) return line(e);
    const t = tally.see(e);
    switch (e.type) {
      case 'phase-start':
        held.set(e.phase, { header: phaseHeader(e), waits: [] });
        return;
      case 'step-start':
        return;
      case 'step-end':
        if (e.status === 'would-change') {
          show(e.phase);
          line(e);
        }
        return;
      case 'gate-end':
        if (e.status === 'would-wait' && !t?.wouldChange) {
          held.get(e.phase)?.waits.push(e);
          return;
        }
        show(e.phase);
        return line(e);
      case 'phase-end': {
        const shown = held.get(e.phase)?.header === undefined;
        if (e.status === 'stopped' || !t) {
          show(e.phase);
          return;
        }
        write(shown ? `  ${checkLine(e.phase, t)}` : `▸ ${checkLine(e.phase, t)}`);
        return;
      }
      default:
        if ('phase' in e) show(e.phase);
        return line(e);
    }
  };
}

const phaseHeader = (e: Extract<EngineEvent, { type: 'phase-start' }>) => `▸ ${e.phase}: ${e.title} [${e.hosts.join(', ')}]`;

/** Each event as its own lines, as an apply run prints them all. */
function eventLines(write: (line: string) => void): (e: EngineEvent) => void {
  return (e) => {
    switch (e.type) {
      case 'run-start':
        write(`bootstrap ${e.env}${e.check ? ' (check mode: nothing is changed)' : ''}: ${e.phases.join(' → ')}`);
        for (const w of e.waivers) write(`  waiver: ${w.cause} is waived for this environment: ${w.reason}`);
        break;
      case 'phase-start':
        write(phaseHeader(e));
        break;
      case 'step-end': {
        const label = { ok: 'ok', changed: 'changed', 'would-change': 'would change', skipped: 'skipped (done in the resumed run)' }[e.status];
        write(`  ${e.host}  ${e.title}: ${label}`);
        for (const c of e.changes) {
          write(`    ${e.status === 'would-change' ? 'would ' : ''}${c.summary}`);
          if (c.detail) write(indentBlock(c.detail, '      '));
        }
        break;
      }
      case 'gate-start':
        write(`  ${e.host}  waiting: ${e.title} (budget ${formatDuration(e.budgetMs)})`);
        break;
      case 'gate-end':
        if (e.status === 'would-wait') write(`  ${e.host}  would wait: ${e.title}`);
        else write(`  ${e.host}  ${e.title}: ${e.status === 'ok' ? `ok after ${formatDuration(e.durationMs)}` : 'failed'}`);
        break;
      case 'action-start':
        write(`  ${e.host}  running: ${e.description} (budget ${formatDuration(e.budgetMs)})`);
        break;
      case 'action-end':
        write(`  ${e.host}  ${e.description}: ${e.status === 'ok' ? `ok after ${formatDuration(e.durationMs)}` : 'failed'}`);
        break;
      case 'check':
        write(`  ${e.host}  ${e.title}: ${e.ok ? 'ok' : 'FAILED'}${e.detail ? ` (${e.detail})` : ''}`);
        break;
      case 'transfer':
        write(`  ${e.host}  ${transferLine(e)}`);
        break;
      case 'waived':
        write(`  ${e.host}  waived ${e.cause}: ${e.reason}`);
        break;
      case 'warning':
        write(`  warning${e.host ? ` (${e.host})` : ''}: ${e.message}`);
        break;
      case 'phase-end':
        if (e.status === 'done') write(`  ${e.phase} done in ${formatDuration(e.durationMs)}`);
        break;
      case 'stopped':
        write(formatStop(e.error));
        break;
      case 'run-end':
        write(`${summaryLine(e.summary)}  (${formatDuration(e.summary.durationMs)})`);
        if (e.logFile) write(`log: ${e.logFile}`);
        if (e.reportFile) write(`report: ${e.reportFile}`);
        break;
      default:
        break;
    }
  };
}
