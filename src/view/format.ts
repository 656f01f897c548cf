// Text shared by the renderers: how a stop and a change read to the operator.
import type { EngineEvent } from '../engine/events.ts';
import type { CauseError } from '../errors.ts';

type StopJson = ReturnType<CauseError['toJSON']>;

/** A named cause as the operator reads it: id and host first, then what was seen, what to do, where to read more. */
export function formatStop(stop: StopJson): string {
  const lines = [`✖ ${stop.cause}${stop.host ? ` on ${stop.host}` : ''}: ${stop.message}`];
  const ev = stop.evidence ?? {};
  if (ev.seen) lines.push(`    seen:    ${ev.seen}`);
  if (ev.command) lines.push(`    command: ${ev.command}${ev.exitCode !== undefined ? `  (exit ${ev.exitCode ?? 'none'})` : ''}`);
  if (ev.excerpt) lines.push('    excerpt:', ...ev.excerpt.split('\n').map((l) => `      | ${l}`));
  lines.push(`    do:      ${stop.remedy}`);
  lines.push(`    runbook: ${stop.runbook}`);
  return lines.join('\n');
}

export function formatDuration(ms: number): string {
  return ms < 10_000
    ? `${(ms / 1000).toFixed(1)} s`
    : ms < 120_000
      ? `${Math.round(ms / 1000)} s`
      : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function indentBlock(text: string, by: string): string {
  return text
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

/** "upload /usr/local/bin/k3s: 30 % of 68.2 MiB (budget 3 min 8 s)": a long transfer's progress. */
export function transferLine(e: Extract<EngineEvent, { type: 'transfer' }>): string {
  return `${e.direction} ${e.path}: ${e.percent} % of ${(e.totalBytes / 1024 / 1024).toFixed(1)} MiB (budget ${formatDuration(e.budgetMs)})`;
}
