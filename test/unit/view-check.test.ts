// In check mode the views print what differs and one line per phase for the rest (issue 16, item 7): a check
// of a built cluster is a line per phase, a phase that would change shows those steps with their changes and
// then its gates; stops are shown whole, an apply run prints every step as before, --json every event.
import { afterEach, expect, it, vi } from 'vitest';
import type { EngineEvent } from '../../src/engine/events.ts';
import { jsonRenderer } from '../../src/view/json.ts';
import { listrRenderer } from '../../src/view/listr.ts';
import { plainRenderer } from '../../src/view/plain.ts';

const HOSTS = ['s1', 's2', 's3', 'a1'];
const STEPS = ['hostname', 'sysctl', 'modules'];

/** A run of node-baseline (converged), k3s-founder (one step differs, a gate after it) and a read-only verify. */
function events(check: boolean): EngineEvent[] {
  const ended = (phase: string, step: string, host: string, status: 'ok' | 'changed' | 'would-change', changes: { summary: string; detail: string }[] = []) =>
    ({ type: 'step-end', phase, step, title: step, host, status, changes, durationMs: 3 }) as const;
  const differs = check ? 'would-change' : 'changed';
  return [
    { type: 'run-start', env: 'prod', check, phases: ['node-baseline', 'k3s-founder', 'verify'], waivers: [] },
    { type: 'phase-start', phase: 'node-baseline', title: 'the hosts k3s needs', hosts: HOSTS },
    ...HOSTS.flatMap((h) =>
      STEPS.flatMap((s): EngineEvent[] => [{ type: 'step-start', phase: 'node-baseline', step: s, title: s, host: h }, ended('node-baseline', s, h, 'ok')]),
    ),
    { type: 'phase-end', phase: 'node-baseline', durationMs: 1200, status: 'done' },
    { type: 'phase-start', phase: 'k3s-founder', title: 'the first server', hosts: ['s1'] },
    ended('k3s-founder', 'binary', 's1', 'ok'),
    // A gate can end before the step that makes its phase differ (hosts run in parallel): it is held back.
    { type: 'gate-end', phase: 'k3s-founder', gate: 'api', title: "founder's API ready", host: 's1', status: check ? 'would-wait' : 'ok', durationMs: 0 },
    ended('k3s-founder', 'config', 's1', differs, [
      { summary: 'write /etc/rancher/k3s/config.yaml (mode 0600)', detail: '-node-ip: 10.0.0.1\n+node-ip: 10.0.0.2' },
    ]),
    { type: 'phase-end', phase: 'k3s-founder', durationMs: 800, status: 'done' },
    { type: 'phase-start', phase: 'verify', title: 'the cluster works', hosts: ['s1'] },
    { type: 'gate-start', phase: 'verify', gate: 'nodes', title: 'node Ready', host: 's1', budgetMs: 60_000 },
    { type: 'check', phase: 'verify', check: 'nodes', title: 'node Ready', host: 's1', ok: true, detail: 'Ready' },
    { type: 'gate-end', phase: 'verify', gate: 'nodes', title: 'node Ready', host: 's1', status: 'ok', durationMs: 400 },
    { type: 'phase-end', phase: 'verify', durationMs: 500, status: 'done' },
    {
      type: 'run-end',
      summary: { ok: 14, changed: check ? 0 : 1, wouldChange: check ? 1 : 0, stopped: 0, durationMs: 2500, check, phaseDurations: {} },
      logFile: 'runs/x.log',
    },
  ];
}

const plain = (evs: EngineEvent[]) => {
  const lines: string[] = [];
  const emit = plainRenderer((l) => lines.push(l));
  for (const e of evs) emit(e);
  return lines;
};

it('plain, check mode: a converged phase is one line; a differing one shows its changes, then its gates, then its counts', () => {
  expect(plain(events(true))).toEqual([
    'bootstrap prod (check mode: nothing is changed): node-baseline → k3s-founder → verify',
    '▸ node-baseline  ok: 4 hosts, 12 steps, nothing would change',
    '▸ k3s-founder: the first server [s1]',
    "  s1  would wait: founder's API ready",
    '  s1  config: would change',
    '    would write /etc/rancher/k3s/config.yaml (mode 0600)',
    '      -node-ip: 10.0.0.1\n      +node-ip: 10.0.0.2',
    '  k3s-founder  1 would change, 1 ok: 1 host, 2 steps, 1 gate would wait (not run in check mode)',
    '▸ verify: the cluster works [s1]',
    '  s1  waiting: node Ready (budget 60 s)',
    '  s1  node Ready: ok (Ready)',
    '  s1  node Ready: ok after 0.4 s',
    '  verify  ok: 1 host, 0 steps, 1 gate passed, nothing would change',
    '14 ok, 1 would change  (2.5 s)',
    'log: runs/x.log',
  ]);
});

it('plain, check mode: gates of a phase that would change nothing are counted, not listed', () => {
  const evs: EngineEvent[] = [
    { type: 'run-start', env: 'prod', check: true, phases: ['kube-vip'], waivers: [] },
    { type: 'phase-start', phase: 'kube-vip', title: 'the VIP', hosts: ['s1', 's2'] },
    ...['s1', 's2'].flatMap((h): EngineEvent[] => [
      { type: 'step-end', phase: 'kube-vip', step: 'manifest', title: 'manifest', host: h, status: 'ok', changes: [], durationMs: 1 },
      { type: 'gate-end', phase: 'kube-vip', gate: 'vip', title: 'the VIP answers', host: h, status: 'would-wait', durationMs: 0 },
    ]),
    { type: 'phase-end', phase: 'kube-vip', durationMs: 10, status: 'done' },
  ];
  expect(plain(evs).slice(1)).toEqual(['▸ kube-vip  ok: 2 hosts, 2 steps, 2 gates would wait (not run in check mode), nothing would change']);
});

it('plain, check mode: a stop is shown whole, under its phase', () => {
  const lines = plain([
    { type: 'run-start', env: 'prod', check: true, phases: ['node-baseline'], waivers: [] },
    { type: 'phase-start', phase: 'node-baseline', title: 'the hosts k3s needs', hosts: ['s1'] },
    { type: 'step-end', phase: 'node-baseline', step: 'hostname', title: 'hostname', host: 's1', status: 'ok', changes: [], durationMs: 1 },
    { type: 'phase-end', phase: 'node-baseline', durationMs: 10, status: 'stopped' },
    {
      type: 'stopped',
      error: {
        cause: 'DISK_LOW',
        host: 's1',
        message: 'too little disk',
        remedy: 'free some',
        runbook: 'runbooks/causes.md#disk_low',
        evidence: { seen: '1 GiB free' },
      },
    } as EngineEvent,
  ]);
  expect(lines.slice(1)).toEqual([
    '▸ node-baseline: the hosts k3s needs [s1]',
    ['✖ DISK_LOW on s1: too little disk', '    seen:    1 GiB free', '    do:      free some', '    runbook: runbooks/causes.md#disk_low'].join('\n'),
  ]);
});

it('plain, apply mode: every step and gate prints, as before', () => {
  const lines = plain(events(false));
  expect(lines.filter((l) => /^ {2}s1 {2}hostname: ok$/.test(l))).toHaveLength(1);
  expect(lines).toContain('  s1  config: changed');
  expect(lines).toContain("  s1  founder's API ready: ok after 0.0 s");
  expect(lines).toContain('▸ node-baseline: the hosts k3s needs [s1, s2, s3, a1]');
  expect(lines).toContain('  node-baseline done in 1.2 s');
  expect(lines.filter((l) => l.endsWith(': ok')).length).toBe(13);
});

it('--json keeps every event of a check run', () => {
  const lines: string[] = [];
  const emit = jsonRenderer((l) => lines.push(l));
  const evs = events(true);
  for (const e of evs) emit(e);
  expect(lines.map((l) => JSON.parse(l))).toEqual(evs);
});

afterEach(() => vi.restoreAllMocks());

it('listr, check mode: a finished phase is titled with its line of counts; only what differs is printed after', async () => {
  // Off a terminal listr2 draws with its simple renderer on stdout: what it draws is read there.
  const drawn: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (drawn.push(String(chunk)), true));
  const lines: string[] = [];
  const view = listrRenderer((l) => lines.push(l));
  for (const e of events(true)) view.emit(e);
  await view.finish();
  vi.restoreAllMocks();
  const screen = drawn.join('');
  expect(screen).toContain('node-baseline  ok: 4 hosts, 12 steps, nothing would change');
  expect(screen).toContain('k3s-founder  1 would change, 1 ok: 1 host, 2 steps, 1 gate would wait (not run in check mode)');
  expect(lines).toEqual([
    'bootstrap prod (check mode: nothing is changed): node-baseline → k3s-founder → verify',
    '  s1  config: would change',
    '    would write /etc/rancher/k3s/config.yaml (mode 0600)',
    '      -node-ip: 10.0.0.1\n      +node-ip: 10.0.0.2',
    '  s1  node Ready: ok (Ready)',
    '14 ok, 1 would change  (2.5 s)',
    'log: runs/x.log',
  ]);
});
