// `lab down` leaves nothing of the lab on the machine: no namespace, bridge, veth, mount, cgroup,
// loop device or process, also after a `lab up` that was killed halfway. These tests use a lab of
// their own (BOOTSTRAP_LAB_INSTANCE, through the CLI) so the shared test lab stays up meanwhile.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, expect, it, vi } from 'vitest';
import { cgroupMounts } from '../../lab/cgroups.ts';
import { labConfig, type LabConfig } from '../../lab/config.ts';
import { sleep } from '../../lab/run.ts';
import { describeAsRoot } from '../support/env.ts';

const cli = new URL('../../bin/lab.js', import.meta.url).pathname;
const INSTANCE = 7;
const own: LabConfig = labConfig(INSTANCE);
const env = { ...process.env, BOOTSTRAP_LAB_INSTANCE: String(INSTANCE) };

function lab(...args: string[]) {
  return spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env });
}

function liveProcessesOf(cfg: LabConfig): string[] {
  const out: string[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const state = readFileSync(`/proc/${e}/stat`, 'utf8').replace(/^.*\) /, '')[0];
      if (state === 'Z') continue;
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const cg = readFileSync(`/proc/${e}/cgroup`, 'utf8');
      // The hosts' processes, and the GitOps git server's sshd (named by its config file in the state folder).
      if (cg.includes(`/${cfg.cgroupDir}/`) || cmd.includes(`${cfg.paths.hostsDir}/`) || cmd.includes(`${cfg.paths.stateDir}/gitops-server/`))
        out.push(`process ${e} ${cmd}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Everything of a lab that could be left on the machine, as readable lines (empty: nothing). */
function leftovers(cfg: LabConfig): string[] {
  const out: string[] = [];
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith(cfg.linkPrefix)) : [];
  out.push(...netns.map((n) => `netns ${n}`));
  const links = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout;
  out.push(
    ...links
      .split('\n')
      .map((l) => l.match(/^\d+:\s+([^:@\s]+)/)?.[1])
      .filter((n) => n && (n.startsWith(cfg.linkPrefix) || n === cfg.net.bridge))
      .map((n) => `link ${n}`),
  );
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '');
  out.push(...mounts.filter((m) => m.startsWith(`${cfg.paths.stateDir}/`) || m.startsWith(`/run/netns/${cfg.linkPrefix}`)).map((m) => `mount ${m}`));
  out.push(
    ...cgroupMounts()
      .map((m) => `${m.point}/${cfg.cgroupDir}`)
      .filter((d) => existsSync(d) && readdirSync(d, { withFileTypes: true }).some((e) => e.isDirectory()))
      .map((d) => `cgroup ${d}`),
  );
  const loops = spawnSync('losetup', ['-n', '-O', 'BACK-FILE', '-l'], { encoding: 'utf8' }).stdout;
  out.push(
    ...loops
      .split('\n')
      .filter((l) => l.includes(`${cfg.paths.stateDir}/`))
      .map((l) => `loop ${l.trim()}`),
  );
  out.push(...liveProcessesOf(cfg));
  return out;
}

describeAsRoot('lab down', () => {
  afterAll(() => {
    lab('down');
  });

  it('after lab up leaves no namespace, bridge, veth, mount, cgroup, loop device or process, in under 10 s', () => {
    const upRes = lab('up', '--servers', '3');
    expect(upRes.stderr).toMatch(/lab up: k3s-lab-1 10\.77\.7\.10, k3s-lab-2 10\.77\.7\.11, k3s-lab-3 10\.77\.7\.12/);
    expect(upRes.stdout.trim()).toBe(own.paths.inventory);
    const seen = leftovers(own);
    // the check can see a lab: three hosts and the GitOps git server
    expect(seen.filter((l) => l.startsWith('netns')).sort()).toEqual([
      `netns ${own.linkPrefix}git`,
      `netns ${own.linkPrefix}s1`,
      `netns ${own.linkPrefix}s2`,
      `netns ${own.linkPrefix}s3`,
    ]);
    expect(seen.some((l) => l.includes('gitops-server/sshd_config'))).toBe(true);
    expect(seen.some((l) => l.startsWith('process'))).toBe(true);

    const t0 = Date.now();
    const downRes = lab('down');
    expect(downRes.status).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(leftovers(own)).toEqual([]);
    expect(existsSync(own.paths.inventory)).toBe(false);
  });

  it('cleans up after a lab up that was killed while booting', async () => {
    const child = spawn(process.execPath, [cli, 'up', '--servers', '2'], { stdio: 'ignore', env });
    // kill it once its hosts exist but before it is done
    const hostsExist = () => existsSync('/run/netns') && readdirSync('/run/netns').some((n) => n.startsWith(own.linkPrefix));
    for (let i = 0; i < 600 && !hostsExist(); i++) await sleep(50);
    await sleep(300);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(leftovers(own).length).toBeGreaterThan(0);

    expect(lab('down').status).toBe(0);
    expect(leftovers(own)).toEqual([]);
  });

  it('says in one line that it needs root when run without it, and exits non-zero', async () => {
    const asNobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];
    // The clone may sit where nobody cannot read it (e.g. under /root); then check the same path in-process.
    if (spawnSync('setpriv', [...asNobody, 'test', '-r', cli]).status === 0) {
      const res = spawnSync('setpriv', [...asNobody, process.execPath, cli, 'status'], { encoding: 'utf8', cwd: '/' });
      expect(res.status).not.toBe(0);
      expect(res.stderr).toBe('lab: the lab needs root (run it with sudo)\n');
    }
    const { main } = await import('../../lab/cli.ts');
    const uid = vi.spyOn(process, 'getuid').mockReturnValue(1000);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await main(['up'])).toBe(69);
      expect(err.mock.calls.map((c) => String(c[0]))).toEqual(['lab: the lab needs root (run it with sudo)\n']);
    } finally {
      uid.mockRestore();
      err.mockRestore();
    }
  });
});
