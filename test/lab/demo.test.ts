// The README's first command: `npm run demo` builds the whole cluster on the lab from cold and ends with
// the summary of what was built.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { repoRoot } from '../support/cli.ts';
import { describeAsRoot } from '../support/env.ts';
import { forgetLab } from '../support/lab.ts';

describeAsRoot('npm run demo', () => {
  it('builds the cluster from cold and ends with the summary', () => {
    const res = spawnSync('npm', ['run', '-s', 'demo'], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, CI: 'true' }, timeout: 900_000 });
    forgetLab(); // the demo replaced the lab's hosts
    const out = res.stdout;
    expect(res.status, out.slice(-3000) + res.stderr).toBe(0);
    expect(out).toMatch(/^ {3}\d+ ok, \d+ changed {2}\(\d/m);
    expect(out).toMatch(/== 3\. what was built/);
    for (const node of ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3']) expect(out).toMatch(new RegExp(`^ {3}${node} +True +True$`, 'm'));
    expect(out).toMatch(/control-plane VIP 10\.77\.0\.9 announced by: k3s-lab-\d/);
    expect(out.match(/^ {3}cilium-\w+ +k3s-lab-\d +10\.77\.0\.9$/gm)).toHaveLength(3);
    expect(out.trimEnd()).toMatch(/npm run lab -- down {3}# tear everything down$/);
  });
});
