// A run as the report receives it, timed: node-baseline on three servers in parallel, the founder waits
// for its API, node-2 joins, and node-3's join stops on JOIN_FOUNDER_UNREACHABLE after waiting 30 s of its
// 60 s budget; kube-vip never runs. The times are round so a test can say where each bar must be drawn.
import type { EngineEvent } from '../../src/engine/events.ts';
import type { TimedEvent } from '../../src/view/report-model.ts';

export const RUN_START = Date.UTC(2025, 0, 2, 3, 4, 5);

/** Start and duration (ms) of every bar the report must draw, by row and title. */
export const EXPECTED_BARS: { phase: string; host: string; title: string; startMs: number; durationMs: number }[] = [];

const events: TimedEvent[] = [];
const at = (ms: number, event: EngineEvent) => events.push({ at: RUN_START + ms, event });

function step(phase: string, host: string, id: string, title: string, from: number, to: number, status: 'ok' | 'changed', changes: string[] = []) {
  at(from, { type: 'step-start', phase, step: id, title, host });
  at(to, { type: 'step-end', phase, step: id, title, host, status, changes: changes.map((summary) => ({ summary, detail: '' })), durationMs: to - from });
  EXPECTED_BARS.push({ phase, host, title, startMs: from, durationMs: to - from });
}

function gate(phase: string, host: string, id: string, title: string, from: number, to: number, budgetMs: number, status: 'ok' | 'failed') {
  at(from, { type: 'gate-start', phase, gate: id, title, host, budgetMs });
  at(to, { type: 'gate-end', phase, gate: id, title, host, status, durationMs: to - from });
  EXPECTED_BARS.push({ phase, host, title, startMs: from, durationMs: to - from });
}

at(0, { type: 'warning', message: "the inventory pins no k3s version for the agents: they take the servers' version" });
at(0, { type: 'run-start', env: 'dev', check: false, phases: ['node-baseline', 'k3s-founder', 'k3s-join', 'kube-vip'], waivers: [] });
at(0, { type: 'phase-start', phase: 'node-baseline', title: 'Prepare the hosts', hosts: ['node-1', 'node-2', 'node-3'] });
for (const [i, host] of ['node-1', 'node-2', 'node-3'].entries()) {
  step('node-baseline', host, 'packages', 'Install the packages', 0, 8_000 + i * 2_000, 'changed', ['install curl, nftables']);
  step('node-baseline', host, 'sysctl', 'Kernel settings', 8_000 + i * 2_000, 10_000 + i * 2_000, 'ok');
}
at(14_000, { type: 'phase-end', phase: 'node-baseline', durationMs: 14_000, status: 'done' });
at(14_000, { type: 'phase-start', phase: 'k3s-founder', title: 'Found the cluster', hosts: ['node-1'] });
step('k3s-founder', 'node-1', 'install', 'Install k3s', 14_000, 24_000, 'changed', ['write /etc/rancher/k3s/config.yaml']);
gate('k3s-founder', 'node-1', 'api', 'The API serves', 24_000, 44_000, 300_000, 'ok');
at(44_000, { type: 'phase-end', phase: 'k3s-founder', durationMs: 30_000, status: 'done' });
at(44_000, { type: 'phase-start', phase: 'k3s-join', title: 'Join the other servers', hosts: ['node-2', 'node-3'] });
step('k3s-join', 'node-2', 'install', 'Install k3s', 44_000, 50_000, 'changed');
gate('k3s-join', 'node-2', 'member', 'An etcd voter', 50_000, 60_000, 60_000, 'ok');
step('k3s-join', 'node-3', 'install', 'Install k3s', 60_000, 66_000, 'changed');
gate('k3s-join', 'node-3', 'member', 'An etcd voter', 66_000, 96_000, 60_000, 'failed');
at(96_000, { type: 'phase-end', phase: 'k3s-join', durationMs: 52_000, status: 'stopped' });
at(96_000, {
  type: 'stopped',
  error: {
    cause: 'JOIN_FOUNDER_UNREACHABLE',
    host: 'node-3',
    message: 'A joining server cannot reach the founder',
    evidence: {
      command: 'journalctl -u k3s -n 40',
      exitCode: 0,
      excerpt: 'level=error msg="failed to get CA certs: dial tcp 10.0.0.10:6443: i/o timeout"',
      seen: 'no CA certs after 30 s',
    },
    remedy: 'Check the founder is up (systemctl status k3s) and that the joiner can reach it on tcp/6443 (firewall, routing).',
    runbook: 'runbooks/causes.md#join_founder_unreachable',
  },
});
at(100_000, {
  type: 'run-end',
  summary: {
    ok: 6,
    changed: 6,
    wouldChange: 0,
    stopped: 1,
    durationMs: 100_000,
    check: false,
    phaseDurations: { 'node-baseline': 14_000, 'k3s-founder': 30_000, 'k3s-join': 52_000 },
  },
  logFile: 'runs/2025-01-02T03-04-05-000Z-abcd1234.log',
});

export const STOPPED_RUN: readonly TimedEvent[] = events;
