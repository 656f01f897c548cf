// `npm run demo` without the Cilium chart: one message saying where the chart goes and the command that
// gets it, exit 1, no stack trace, and nothing booted or torn down (it stops before the lab is touched).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.ts';

// A lab state folder of its own: a lab an earlier test brought up keeps the chart in its artifacts folder,
// where the demo rightly finds it (and would boot that lab); this instance number is no lab test's either.
const labState = mkdtempSync(join(tmpdir(), 'demo-chart-missing-'));
afterAll(() => rmSync(labState, { recursive: true, force: true }));

it('names the missing chart and how to get it, before touching the lab', () => {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['bin/demo.js'], {
    cwd: repoRoot,
    env: { ...process.env, BOOTSTRAP_CILIUM_CHART: '/nonexistent/charts/cilium-1.19.5.tgz', BOOTSTRAP_LAB_INSTANCE: '9', BOOTSTRAP_LAB_STATE: labState },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr).toContain('demo: stopped: ARTIFACT_MISSING — the Cilium chart is not at /nonexistent/charts/cilium-1.19.5.tgz.');
  expect(r.stderr).toContain('runbook: runbooks/causes.md#artifact_missing');
  expect(r.stderr).toContain('curl -fL -o /nonexistent/charts/cilium-1.19.5.tgz https://helm.cilium.io/cilium-1.19.5.tgz');
  expect(r.stderr).not.toMatch(/^\s+at /m);
  // No lab was booted: that alone takes far longer than starting node.
  expect(Date.now() - t0).toBeLessThan(30_000);
}, 60_000);
