// The run report (runs/<run-id>.html): a view like the terminal's, drawn from the same events, as one
// self-contained page: the summary, then a timeline with a row per phase and host and, under it, its steps,
// gates (their waits against their budgets) and actions, and the stop on the row it stopped. Pure: events
// in, HTML out; every string from an event is escaped, and nothing but the events is read.
import { summaryLine } from '../engine/events.ts';
import { formatDuration } from './format.ts';
import { buildModel, type Item, type ReportModel, type Row, type StopJson, type TimedEvent } from './report-model.ts';
import { REPORT_CSS } from './report-style.ts';

export function renderReport(events: TimedEvent[], meta: { runId: string }): string {
  const m = buildModel(events);
  const title = `bootstrap ${m.env} — run ${meta.runId}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<h1>bootstrap ${esc(m.env)}${m.check ? ' <span class="meta">(check mode: nothing changed)</span>' : ''}</h1>
<p class="sub">run ${esc(meta.runId)} · started ${esc(new Date(m.startedAt).toISOString())}</p>
${summary(m)}
<h2>Timeline</h2>
${legend()}
<div class="timeline">
${axis(m.spanMs)}
${m.phases.map((p) => phase(m, p)).join('\n')}
</div>
${m.logFile ? `<footer>Every remote command of this run, with its output: <code>${esc(m.logFile)}</code></footer>` : ''}
</body>
</html>
`;
}

function summary(m: ReportModel): string {
  const s = m.summary;
  const stops = [...m.rows.flatMap((r) => r.stops.map((x) => x.stop)), ...m.runStops];
  const state = stops.length || s?.stopped ? 'stopped' : s?.check && s.wouldChange ? 'would-change' : 'done';
  const outcome = { stopped: 'Stopped', 'would-change': 'Changes to make', done: 'Done' }[state];
  const counts: [string, string][] = s
    ? [['ok', String(s.ok)], s.check ? ['would change', String(s.wouldChange)] : ['changed', String(s.changed)], ['duration', formatDuration(s.durationMs)]]
    : [];
  return `<section class="summary ${state}" id="summary">
<p class="outcome">${outcome}${s ? ` <span class="meta">${esc(summaryLine(s))}</span>` : ''}</p>
<dl class="counts">${counts.map(([k, v]) => `<div><dt>${k}</dt><dd>${esc(v)}</dd></div>`).join('')}</dl>
<table class="phases"><tr><th>phase</th><th>outcome</th><th>duration</th></tr>
${m.phases
  .map((p) => {
    const cls = p.ran ? (p.status ?? 'stopped') : 'not-run';
    const said = p.ran ? (p.status ?? 'interrupted') : 'not run';
    return `<tr><td>${esc(p.id)}</td><td class="${cls}">${esc(said)}</td><td>${p.durationMs !== undefined ? formatDuration(p.durationMs) : ''}</td></tr>`;
  })
  .join('\n')}
</table>
${stops.map(stopCard).join('\n')}
${m.warnings.length ? `<ul class="warnings">${m.warnings.map((w) => `<li>warning: ${esc(w)}</li>`).join('')}</ul>` : ''}
${m.waivers.length ? `<ul class="waivers">${m.waivers.map((w) => `<li>waiver: ${esc(w.cause)}: ${esc(w.reason)}</li>`).join('')}</ul>` : ''}
</section>`;
}

/** A named cause as the terminal shows it: id and host, what was seen, the command, an excerpt, what to do. */
function stopCard(stop: StopJson): string {
  const ev = stop.evidence ?? {};
  const fields: [string, string][] = [];
  if (ev.seen) fields.push(['seen', esc(ev.seen)]);
  if (ev.command)
    fields.push(['command', `<code>${esc(ev.command)}</code>${ev.exitCode !== undefined ? ` (exit ${esc(String(ev.exitCode ?? 'none'))})` : ''}`]);
  if (ev.excerpt) fields.push(['excerpt', `<pre>${esc(lastLines(ev.excerpt, 12))}</pre>`]);
  fields.push(['do', esc(stop.remedy)], ['runbook', `<code>${esc(stop.runbook)}</code>`]);
  return `<div class="stop" data-cause="${esc(stop.cause)}" data-host="${esc(stop.host ?? '')}">
<span class="cause">✖ ${esc(stop.cause)}</span>${stop.host ? ` on <b>${esc(stop.host)}</b>` : ''}: ${esc(stop.message)}
<dl>${fields.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>
</div>`;
}

function legend(): string {
  const keys: [string, string][] = [
    ['ok', 'step ok'],
    ['changed', 'step changed'],
    ['would-change', 'would change'],
    ['gate', 'gate: its wait, dashed: its budget'],
    ['action', 'action'],
    ['skipped', 'skipped (resumed)'],
    ['failed', 'stopped'],
    ['unfinished', 'cut short'],
  ];
  return `<div class="legend">${keys.map(([c, t]) => `<span class="${c}">${t}</span>`).join('')}</div>`;
}

function axis(spanMs: number): string {
  const step = tickStep(spanMs);
  const ticks: string[] = [];
  for (let t = 0; t < spanMs; t += step) ticks.push(`<div class="tick" style="left:${pct(t, spanMs)}">${t ? formatDuration(t) : '0'}</div>`);
  return `<div class="row axis"><div class="label meta">phase · host · step</div><div class="track">${ticks.join('')}</div></div>`;
}

/** A round interval that puts at most ten ticks on the axis. */
function tickStep(spanMs: number): number {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].map((s) => s * 1000);
  return steps.find((s) => spanMs / s <= 10) ?? Math.ceil(spanMs / 10 / 3_600_000) * 3_600_000;
}

function phase(m: ReportModel, p: ReportModel['phases'][number]): string {
  const rows = m.rows.filter((r) => r.phase === p.id);
  if (!p.ran)
    return `<div class="row phase not-run" data-phase="${esc(p.id)}"><div class="label">${esc(p.id)} <span class="meta">not run</span></div><div class="track"></div></div>`;
  const items = rows.flatMap((r) => r.items);
  const start = Math.min(...items.map((i) => i.start));
  const end = Math.max(...items.map((i) => i.end));
  const span = items.length ? `<div class="span phase-span" style="${box(start, end, m.spanMs)}"></div>` : '';
  const said = `${p.status ?? 'interrupted'}${p.durationMs !== undefined ? `, ${formatDuration(p.durationMs)}` : ''}`;
  const head = `<div class="row phase" data-phase="${esc(p.id)}"><div class="label" title="${esc(p.title)}">${esc(p.id)} <span class="meta">${esc(p.title)} · ${esc(said)}</span></div><div class="track">${span}</div></div>`;
  return [head, ...rows.map((r) => hostRow(r, m.spanMs))].join('\n');
}

function hostRow(r: Row, spanMs: number): string {
  const start = r.items.length ? Math.min(...r.items.map((i) => i.start)) : 0;
  const end = r.items.length ? Math.max(...r.items.map((i) => i.end)) : 0;
  const stopped = r.stops.length > 0 || r.items.some((i) => i.status === 'failed');
  const marks = r.stops.map((s) => `<div class="stopmark" style="left:${pct(s.at, spanMs)}"></div>`).join('');
  const span = r.items.length ? `<div class="span${stopped ? ' stopped' : ''}" style="${box(start, end, spanMs)}"></div>` : '';
  const head = `<div class="row host${stopped ? ' stopped' : ''}" data-phase="${esc(r.phase)}" data-host="${esc(r.host)}"><div class="label">${esc(r.host)} <span class="meta">${r.items.length ? formatDuration(end - start) : 'nothing ran'}</span></div><div class="track">${span}${marks}</div></div>`;
  const stops = r.stops.map((s) => `<div class="row">${stopCard(s.stop)}</div>`);
  return [head, ...r.items.map((i) => itemRow(i, spanMs)), ...stops].join('\n');
}

const KIND_LABEL: Record<Item['kind'], string> = { step: 'step', gate: 'gate', action: 'action', check: 'check', waived: 'waived' };
const STATUS_LABEL: Record<Item['status'], string> = {
  ok: 'ok',
  changed: 'changed',
  'would-change': 'would change',
  skipped: 'skipped',
  'would-wait': 'would wait',
  failed: 'stopped',
  unfinished: 'cut short',
};

function itemRow(i: Item, spanMs: number): string {
  const instant = i.kind === 'check' || i.kind === 'waived' || i.status === 'skipped' || i.status === 'would-wait';
  // A wait reads against its budget: "ok · 20 s of 5 min".
  const took = instant ? '' : ` · ${formatDuration(i.end - i.start)}${i.budgetMs !== undefined ? ` of ${formatDuration(i.budgetMs)}` : ''}`;
  const said = i.kind === 'waived' ? 'waived' : i.kind === 'check' && i.status === 'failed' ? 'failed' : STATUS_LABEL[i.status];
  const meta = `${said}${took}`;
  const colour = colourOf(i);
  const data = `data-kind="${i.kind}" data-status="${i.status}" data-start-ms="${i.start}" data-duration-ms="${i.end - i.start}"`;
  const drawn = instant
    ? `<div class="mark ${colour}" ${data} style="left:${pct(i.start, spanMs)}" title="${esc(i.title)}"></div>`
    : `${budgetBox(i, spanMs)}<div class="bar ${colour}" ${data} style="${box(i.start, i.end, spanMs)}" title="${esc(`${i.title}: ${meta}`)}"></div>`;
  const notes = i.notes.length ? `<ul class="notes">${i.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : '';
  return `<div class="row item ${i.kind} ${i.status}"><div class="label" title="${esc(`${i.title}: ${meta}`)}">${KIND_LABEL[i.kind]} · ${esc(i.title)} <span class="meta">${esc(meta)}</span></div><div class="track">${drawn}</div>${notes}</div>`;
}

/** A stop or a cut is red or hatched whatever it was; otherwise a step or check shows its outcome, a gate or action its kind. */
function colourOf(i: Item): string {
  if (i.status === 'failed' || i.status === 'unfinished' || i.status === 'would-wait') return i.status;
  if (i.kind === 'gate' || i.kind === 'action') return i.kind;
  return i.kind === 'waived' ? 'skipped' : i.status;
}

/** A gate's or action's budget behind its bar: how long it could have waited, cut at the timeline's end. */
function budgetBox(i: Item, spanMs: number): string {
  if (i.budgetMs === undefined) return '';
  const end = i.start + i.budgetMs;
  return `<div class="budget${end > spanMs ? ' beyond' : ''}" style="${box(i.start, Math.min(end, spanMs), spanMs)}"></div>`;
}

const box = (start: number, end: number, spanMs: number) => `left:${pct(start, spanMs)};width:${pct(Math.max(0, end - start), spanMs)}`;
const pct = (ms: number, spanMs: number) => `${((100 * ms) / spanMs).toFixed(3)}%`;

function lastLines(text: string, n: number): string {
  const lines = text.split('\n');
  return lines.length > n ? ['…', ...lines.slice(-n)].join('\n') : text;
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
