// The README's first command: `npm run demo` builds the whole cluster on the lab from cold, proves it
// highly available with the failover drill, and ends with the summary of what was built.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { labInstance, NET } from '../../lab/config.ts';
import { repoRoot } from '../support/cli.ts';
import { describeAsRoot } from '../support/env.ts';
import { forgetLab } from '../support/lab.ts';

const vip = NET.vip.replaceAll('.', '\\.');

describeAsRoot('npm run demo', () => {
  it('builds the cluster from cold, passes the drill and ends with the summary', () => {
    const res = spawnSync('npm', ['run', '-s', 'demo'], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, CI: 'true' }, timeout: 1_200_000 });
    forgetLab(); // the demo replaced the lab's hosts
    const out = res.stdout;
    expect(res.status, out.slice(-3000) + res.stderr).toBe(0);
    // The build and the verify run, each with its plain output and its count line.
    expect(out).toMatch(/^ {3}\d+ ok, \d+ changed {2}\(\d/m);
    expect(out).toMatch(/== 3\. bootstrap verify lab --drill/);
    expect(out).toMatch(/^ {5}k3s-lab-\d {2}failover drill: ok \(VIP moved from k3s-lab-\d to k3s-lab-\d in \d+\.\d s/m);
    // The summary comes last: nothing of the build or the verify is printed after it.
    const summary = out.slice(out.indexOf('== 4. summary'));
    expect(out.indexOf('== 4. summary')).toBeGreaterThan(out.indexOf('== 3.'));
    for (const node of ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3']) expect(summary).toMatch(new RegExp(`^ {3}${node} +True +True$`, 'm'));
    expect(summary).toMatch(new RegExp(`control-plane VIP ${vip} announced by: k3s-lab-\\d`));
    expect(summary.match(new RegExp(`^ {3}cilium-\\w+ +k3s-lab-\\d +${vip}$`, 'gm'))).toHaveLength(3);
    expect(summary).toMatch(/^ {3}verify +\d/m);
    // The last phase hands the cluster to Flux: its Kustomizations are Ready at the repository's revision.
    expect(summary).toMatch(/^ {3}flux +\d/m);
    expect(summary).toMatch(/^ {3}flux-system +True +main@sha1:[0-9a-f]{40}$/m);
    const seconds = Number(/failover drill: VIP moved from k3s-lab-\d to k3s-lab-\d in (\d+\.\d) s/.exec(summary)?.[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(35);
    expect(summary).toMatch(/ssh k3s-lab-1 sudo k3s kubectl get nodes$/m);
    expect(out.trimEnd()).toMatch(/npm run lab -- down {3}# tear everything down$/);
    // The operator's next commands, as printed: the inventory `lab up` wrote and the default state folder, so
    // on the default lab they need no flag at all. Each runs as printed and works: the rerun changes nothing.
    const next = (what: string) => new RegExp(`^ {3}((?:\\S+=\\S+ )?npx bootstrap ${what}(?: --inventory \\S+)?)(?: {3}#.*)?$`, 'm').exec(summary)?.[1];
    const rerun = next('lab');
    const verify = next('verify lab');
    expect([rerun, verify, next('backup lab')].every(Boolean), summary).toBe(true);
    if (labInstance() === 0) expect([rerun, verify]).toEqual(['npx bootstrap lab', 'npx bootstrap verify lab']);
    for (const [cmd, expected] of [
      [rerun!, /^\d+ ok, 0 changed {2}\(/m],
      [verify!, /^\d+ ok, 0 would change {2}\(/m], // verify proves in check mode
    ] as const) {
      const r = spawnSync('sh', ['-c', cmd], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, CI: 'true' }, timeout: 300_000 });
      expect(r.status, `${cmd}\n${r.stdout.slice(-2000)}${r.stderr}`).toBe(0);
      expect(r.stdout, cmd).toMatch(expected);
    }
  }, 1_200_000);
});
