// The run report's page, rendered from events alone: a row per phase and host with its steps and gates
// where the clock put them, the stop on the row it stopped with its cause, evidence and remedy, the
// summary, and every string from an event escaped.
import { describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../src/engine/events.ts';
import { renderReport } from '../../src/view/report-html.ts';
import type { TimedEvent } from '../../src/view/report-model.ts';
import { RUN_START, STOPPED_RUN } from '../support/report-events.ts';

const render = (events: readonly TimedEvent[]) => renderReport([...events], { runId: 'run-1' });
const timed = (...events: [number, EngineEvent][]): TimedEvent[] => events.map(([at, event]) => ({ at: RUN_START + at, event }));
const summary = { ok: 0, changed: 0, wouldChange: 0, stopped: 1, durationMs: 10_000, check: false, phaseDurations: {} };

/** The page's rows in order: "phase" for a phase's head, "phase host" for a host's. */
const rowsOf = (html: string) =>
  [...html.matchAll(/<div class="row (phase|host)[^"]*" data-phase="([^"]*)"(?: data-host="([^"]*)")?/g)].map((m) => (m[3] ? `${m[2]} ${m[3]}` : m[2]));

describe('the run report', () => {
  const html = render(STOPPED_RUN);

  it('has a row per phase and host, in run order, and a row for the phase that never ran', () => {
    expect(rowsOf(html)).toEqual([
      'node-baseline',
      'node-baseline node-1',
      'node-baseline node-2',
      'node-baseline node-3',
      'k3s-founder',
      'k3s-founder node-1',
      'k3s-join',
      'k3s-join node-2',
      'k3s-join node-3',
      'kube-vip',
    ]);
    expect(html).toMatch(/<div class="row phase not-run" data-phase="kube-vip">.*not run/);
  });

  it('places each step and gate by its start and duration against the whole run (100 s here)', () => {
    expect(html).toContain('data-kind="gate" data-status="ok" data-start-ms="24000" data-duration-ms="20000" style="left:24.000%;width:20.000%"');
    expect(html).toContain('data-kind="step" data-status="changed" data-start-ms="14000" data-duration-ms="10000" style="left:14.000%;width:10.000%"');
    // A wait reads against its budget, which is drawn behind it (cut at the run's end).
    expect(html).toMatch(/gate · The API serves <span class="meta">ok · 20 s of 5 min 0 s<\/span>/);
    expect(html).toContain('<div class="budget beyond" style="left:24.000%;width:76.000%"></div>');
  });

  it("shows the stop on the row it stopped: the failed gate in the stop's colour, cause, host, evidence and remedy", () => {
    const node3 = html.slice(html.indexOf('data-phase="k3s-join" data-host="node-3"'));
    expect(node3).toMatch(/^data-phase="k3s-join" data-host="node-3"><div class="label">node-3/);
    expect(node3).toContain('<div class="row item gate failed">');
    expect(node3).toContain('data-kind="gate" data-status="failed" data-start-ms="66000" data-duration-ms="30000"');
    expect(node3).toContain('<div class="stopmark" style="left:96.000%"></div>');
    const card = node3.slice(node3.indexOf('<div class="stop"'));
    expect(card).toMatch(/^<div class="stop" data-cause="JOIN_FOUNDER_UNREACHABLE" data-host="node-3">/);
    expect(card).toContain('no CA certs after 30 s');
    expect(card).toContain('journalctl -u k3s -n 40</code> (exit 0)');
    expect(card).toContain('failed to get CA certs: dial tcp 10.0.0.10:6443: i/o timeout');
    expect(card).toContain('Check the founder is up (systemctl status k3s)');
    expect(card).toContain('runbooks/causes.md#join_founder_unreachable');
    // Rows that did not stop carry no stop.
    expect(html.match(/<div class="row host stopped"/g)).toHaveLength(1);
  });

  it('sums the run up: stopped, the counts, the duration, each phase, the log', () => {
    const top = html.slice(html.indexOf('<section class="summary'), html.indexOf('</section>'));
    expect(top).toMatch(/^<section class="summary stopped"/);
    expect(top).toContain('Stopped <span class="meta">6 ok, 6 changed, stopped</span>');
    expect(top).toContain('<dt>changed</dt><dd>6</dd>');
    expect(top).toContain('<dt>duration</dt><dd>100 s</dd>');
    expect(top).toContain('<td>k3s-join</td><td class="stopped">stopped</td><td>52 s</td>');
    expect(top).toContain('<td>kube-vip</td><td class="not-run">not run</td>');
    expect(top).toContain('data-cause="JOIN_FOUNDER_UNREACHABLE"');
    expect(top).toContain('warning: the inventory pins no k3s version for the agents: they take the servers&#39; version');
    expect(html).toContain('<code>runs/2025-01-02T03-04-05-000Z-abcd1234.log</code>');
    expect(html).toContain('started 2025-01-02T03:04:05.000Z');
  });

  it('is self-contained: no script, no stylesheet or image from elsewhere', () => {
    expect(html).not.toMatch(/<script|<link|<img|src=|@import|url\(/i);
  });

  it('escapes every string an event carries: host, titles, evidence, warnings', () => {
    const evil = '<img src=x onerror=alert(1)>"\'&';
    const page = render(
      timed(
        [0, { type: 'warning', message: evil }],
        [0, { type: 'run-start', env: evil, check: false, phases: ['p'], waivers: [{ cause: 'X', reason: evil }] }],
        [0, { type: 'phase-start', phase: 'p', title: evil, hosts: [evil] }],
        [0, { type: 'step-start', phase: 'p', step: 's', title: evil, host: evil }],
        [
          1_000,
          { type: 'step-end', phase: 'p', step: 's', title: evil, host: evil, status: 'changed', changes: [{ summary: evil, detail: '' }], durationMs: 1_000 },
        ],
        [1_000, { type: 'phase-end', phase: 'p', durationMs: 1_000, status: 'stopped' }],
        [
          1_000,
          {
            type: 'stopped',
            error: { cause: 'APPLY_FAILED', host: evil, message: evil, evidence: { seen: evil, command: evil, excerpt: evil }, remedy: evil, runbook: evil },
          },
        ],
        [2_000, { type: 'run-end', summary, logFile: evil }],
      ),
    );
    expect(page).not.toContain('<img');
    expect(page).not.toContain('"\'&');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    // Every line the event carried is there, escaped: host, step, change, stop, remedy, log.
    expect(page.split('&lt;img').length - 1).toBeGreaterThanOrEqual(15);
  });

  it('a step still running when its host stopped ends red where the phase ended', () => {
    const page = render(
      timed(
        [0, { type: 'run-start', env: 'dev', check: false, phases: ['p'], waivers: [] }],
        [0, { type: 'phase-start', phase: 'p', title: 'P', hosts: ['a', 'b'] }],
        [2_000, { type: 'step-start', phase: 'p', step: 's', title: 'Upload', host: 'a' }],
        [2_000, { type: 'step-start', phase: 'p', step: 's', title: 'Upload', host: 'b' }],
        [6_000, { type: 'phase-end', phase: 'p', durationMs: 6_000, status: 'stopped' }],
        [
          6_000,
          {
            type: 'stopped',
            error: { cause: 'APPLY_FAILED', host: 'a', message: 'A change failed', evidence: { seen: 'exit 1' }, remedy: 'Read the log.', runbook: 'r' },
          },
        ],
        [8_000, { type: 'run-end', summary: { ...summary, durationMs: 8_000 } }],
      ),
    );
    expect(page).toContain('data-kind="step" data-status="failed" data-start-ms="2000" data-duration-ms="4000" style="left:25.000%;width:50.000%"');
    // The other host's step was cut short by the stop, not stopped by a cause of its own.
    expect(page).toContain('data-kind="step" data-status="unfinished" data-start-ms="2000" data-duration-ms="4000"');
    expect(page).toMatch(/<div class="row item step failed"><div class="label"[^>]*>step · Upload <span class="meta">stopped · 4.0 s/);
  });

  it('a stop before any host was dialled is in the summary, and every phase reads not run', () => {
    const page = render(
      timed(
        [0, { type: 'run-start', env: 'dev', check: false, phases: ['node-baseline', 'k3s-founder'], waivers: [] }],
        [
          100,
          {
            type: 'stopped',
            error: {
              cause: 'LOCK_HELD',
              host: 'node-1',
              message: 'Another run holds the lock',
              evidence: { seen: 'run r-2 (ops@laptop)' },
              remedy: 'Wait.',
              runbook: 'r',
            },
          },
        ],
        [200, { type: 'run-end', summary: { ...summary, durationMs: 200 } }],
      ),
    );
    expect(rowsOf(page)).toEqual(['node-baseline', 'k3s-founder']);
    expect(page.match(/not run/g)!.length).toBeGreaterThanOrEqual(4);
    expect(page).toMatch(/<section class="summary stopped"[\s\S]*data-cause="LOCK_HELD" data-host="node-1"[\s\S]*run r-2 \(ops@laptop\)/);
  });

  it('a check run says what would change, and a gate it would wait on is a mark, not a bar', () => {
    const page = render(
      timed(
        [0, { type: 'run-start', env: 'dev', check: true, phases: ['p'], waivers: [] }],
        [0, { type: 'phase-start', phase: 'p', title: 'P', hosts: ['a'] }],
        [0, { type: 'step-start', phase: 'p', step: 's', title: 'Write the config', host: 'a' }],
        [
          500,
          {
            type: 'step-end',
            phase: 'p',
            step: 's',
            title: 'Write the config',
            host: 'a',
            status: 'would-change',
            changes: [{ summary: 'write /etc/x', detail: '' }],
            durationMs: 500,
          },
        ],
        [500, { type: 'gate-end', phase: 'p', gate: 'g', title: 'API serves', host: 'a', status: 'would-wait', durationMs: 0 }],
        [500, { type: 'phase-end', phase: 'p', durationMs: 500, status: 'done' }],
        [1_000, { type: 'run-end', summary: { ...summary, stopped: 0, wouldChange: 1, check: true, durationMs: 1_000 } }],
      ),
    );
    expect(page).toContain('<section class="summary would-change"');
    expect(page).toContain('(check mode: nothing changed)');
    expect(page).toContain('<dt>would change</dt><dd>1</dd>');
    expect(page).toContain('<li>would write /etc/x</li>');
    expect(page).toMatch(/<div class="mark would-wait" data-kind="gate" data-status="would-wait"/);
  });

  it('a failed check reads failed and a waiver names its cause and reason, each a mark at its time', () => {
    const page = render(
      timed(
        [0, { type: 'run-start', env: 'dev', check: false, phases: ['verify'], waivers: [] }],
        [0, { type: 'phase-start', phase: 'verify', title: 'Prove the cluster', hosts: ['a'] }],
        [1_000, { type: 'waived', phase: 'verify', host: 'a', cause: 'DISK_LOW', reason: 'lab disks are small' }],
        [2_000, { type: 'check', phase: 'verify', check: 'etcd', title: 'etcd voters', host: 'a', ok: false, detail: '2 of 3 voters' }],
        [4_000, { type: 'run-end', summary: { ...summary, durationMs: 4_000 } }],
      ),
    );
    expect(page).toMatch(/waived · DISK_LOW <span class="meta">waived<\/span>.*data-kind="waived"[^>]*style="left:25.000%".*<li>lab disks are small<\/li>/);
    expect(page).toMatch(
      /check · etcd voters <span class="meta">failed<\/span>.*<div class="mark failed" data-kind="check"[^>]*style="left:50.000%".*<li>2 of 3 voters<\/li>/,
    );
  });
});
