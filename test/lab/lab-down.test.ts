// `lab down` leaves nothing of the lab on the machine: no namespace, bridge, veth, mount, cgroup,
// loop device or process, also after a `lab up` that was killed halfway.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, expect, it, vi } from 'vitest';
import { down, up } from '../../lab/api.ts';
import { cgroupMounts } from '../../lab/cgroups.ts';
import { CGROUP_DIR, paths } from '../../lab/config.ts';
import { sleep } from '../../lab/run.ts';
import { describeAsRoot } from '../support/env.ts';
import { forgetLab } from '../support/lab.ts';

const cli = new URL('../../bin/lab.js', import.meta.url).pathname;

/** Everything of the lab that could be left on the machine, as readable lines (empty: nothing). */
function leftovers(): string[] {
  const out: string[] = [];
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith('blab-')) : [];
  out.push(...netns.map((n) => `netns ${n}`));
  const links = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout;
  out.push(...links.split('\n').map((l) => l.match(/^\d+:\s+([^:@\s]+)/)?.[1]).filter((n) => n && (n.startsWith('blab') )).map((n) => `link ${n}`));
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '');
  out.push(...mounts.filter((m) => m.startsWith(paths.stateDir) || m.includes('/run/netns/blab-') || m.includes('.build-')).map((m) => `mount ${m}`));
  out.push(...cgroupMounts().map((m) => `${m.point}/${CGROUP_DIR}`).filter((d) => existsSync(d) && readdirSync(d, { withFileTypes: true }).some((e) => e.isDirectory())).map((d) => `cgroup ${d}`));
  const loops = spawnSync('losetup', ['-n', '-O', 'BACK-FILE', '-l'], { encoding: 'utf8' }).stdout;
  out.push(...loops.split('\n').filter((l) => l.includes(paths.stateDir)).map((l) => `loop ${l.trim()}`));
  // Live processes of the lab: a host's systemd or anything running from the lab's state folder.
  const ps = spawnSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' }).stdout;
  out.push(
    ...ps
      .split('\n')
      .filter((l) => !l.trim().startsWith('Z') && (l.includes('/lib/systemd/systemd --system') || l.includes(`${paths.hostsDir}/`)))
      .map((l) => `process ${l.trim()}`),
  );
  return out;
}

describeAsRoot('lab down', () => {
  afterAll(() => forgetLab());

  it('after lab up leaves no namespace, bridge, veth, mount, cgroup, loop device or process, in under 10 s', async () => {
    await up({ servers: 3, agents: 0 });
    expect(leftovers().length).toBeGreaterThan(0); // the check can see a lab
    const t0 = Date.now();
    await down();
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(leftovers()).toEqual([]);
    expect(existsSync(paths.inventory)).toBe(false);
  });

  it('cleans up after a lab up that was killed while booting', async () => {
    const child = spawn(process.execPath, [cli, 'up', '--servers', '2'], { stdio: 'ignore' });
    // kill it once hosts exist but before it is done
    for (let i = 0; i < 200 && !(existsSync('/run/netns') && readdirSync('/run/netns').some((n) => n.startsWith('blab-'))); i++) await sleep(50);
    await sleep(300);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(leftovers().length).toBeGreaterThan(0);
    await down();
    expect(leftovers()).toEqual([]);
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
