// The plain renderer: one line per event that matters, for CI logs and pipes (no cursor tricks).
import type { EngineEvent } from '../engine/events.ts';
import { summaryLine } from '../engine/events.ts';
import { formatDuration, formatStop, indentBlock, transferLine } from './format.ts';

export function plainRenderer(write: (line: string) => void): (e: EngineEvent) => void {
  return (e) => {
    switch (e.type) {
      case 'run-start':
        write(`bootstrap ${e.env}${e.check ? ' (check mode: nothing is changed)' : ''}: ${e.phases.join(' → ')}`);
        for (const w of e.waivers) write(`  waiver: ${w.cause} is waived for this environment: ${w.reason}`);
        break;
      case 'phase-start':
        write(`▸ ${e.phase}: ${e.title} [${e.hosts.join(', ')}]`);
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
