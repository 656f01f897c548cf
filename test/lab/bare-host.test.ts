// A lab host is as bare as a stock Debian 12 server: what the twins need lives off every PATH, and the
// engine neither finds nor needs curl, wget, etcdctl, etcd or kubectl there. And node-baseline's rename
// keeps the host's own name resolvable, so sudo never warns "unable to resolve host".
import { afterAll, beforeAll, expect, it } from 'vitest';
import { host, hostExec, ssh } from '../../lab/api.ts';
import { LAB_TOOLS, LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';
import { bootstrap, freshStateDir, stopsOf } from '../support/cluster.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, holdLab } from '../support/lab.ts';

const ABSENT = 'curl wget etcdctl etcd kubectl';

describeAsRoot('a bare lab host', () => {
  beforeAll(async () => {
    await ensureLab();
  });

  it(`finds none of ${ABSENT} on the PATH, as the ops user and under sudo`, async () => {
    for (const h of ['k3s-lab-1', 'k3s-lab-2']) {
      // `command -v` prints the path of each one it finds and fails when any is missing (bash: 1, dash: 127)
      const asOps = await ssh(h, `command -v ${ABSENT}; echo "rc=$?"`, { allowFail: true });
      expect(asOps.stdout, `${h} as ops (bash)`).toMatch(/^rc=[1-9]\d*\n$/);
      const asRoot = await ssh(h, `sudo -n sh -c 'command -v ${ABSENT}; echo "rc=$?"'`, { allowFail: true });
      expect(asRoot.stdout, `${h} under sudo (sh)`).toMatch(/^rc=[1-9]\d*\n$/);
      // each one alone, so one found among missing ones cannot hide
      const each = await ssh(h, `sudo -n sh -c 'for t in ${ABSENT} node git arping openssl; do command -v $t; done; true'`);
      expect(each.stdout, h).toBe('');
    }
  });

  it("keeps the twins' programs in their own folder, and they run", async () => {
    const out = await hostExec(
      'k3s-lab-1',
      `for t in ${LAB_TOOLS.join(' ')}; do [ -x ${LAB_TOOLS_DIR}/$t ] && echo $t; done; ${LAB_TOOLS_DIR}/node -e 'console.log(process.version)'; ${LAB_TOOLS_DIR}/etcdctl version | head -n1`,
    );
    expect(out.stdout).toMatch(new RegExp(`^${LAB_TOOLS.join('\n')}\nv\\d+\\.\\d+\\.\\d+\netcdctl version: 3\\.`));
    // none of the packages that would put them on the PATH is installed (kubernetes-client is, its kubectl moved off the PATH)
    const pkgs = await hostExec(
      'k3s-lab-1',
      `dpkg-query -W -f '\${db:Status-Abbrev}\${Package}\\n' 2>/dev/null | grep -E '^ii *(curl|wget|etcd-server|etcd-client|git|nodejs)$'; true`,
    );
    expect(pkgs.stdout.split('\n').filter((l) => /^ii/.test(l))).toEqual([]);
  });
});

describeAsRoot('node-baseline renames a host and keeps its name resolvable', () => {
  const stateDir = freshStateDir();
  const H = 'k3s-lab-2';
  let release: (() => void) | undefined;
  let hostsBefore = '';

  beforeAll(async () => {
    await ensureLab();
    release = await holdLab();
    hostsBefore = (await hostExec(H, 'cat /etc/hosts')).stdout;
  });

  afterAll(async () => {
    await hostExec(H, `printf '%s' '${hostsBefore.replace(/'/g, `'\\''`)}' > /etc/hosts; echo ${H} > /etc/hostname; hostname ${H}`).catch(() => undefined);
    release?.();
  });

  it('after a build, `sudo true` prints no warning; a rerun changes nothing', async () => {
    // A stock install named "debian": the installer's 127.0.1.1 line, and no line for the inventory name.
    await hostExec(H, `sed -i '/\\s${H}$/d' /etc/hosts && printf '127.0.1.1\\tdebian\\n' >> /etc/hosts && echo debian > /etc/hostname && hostname debian`);
    expect((await ssh(H, 'sudo -n true')).stderr).toBe('');
    // Renaming alone (what node-baseline did before) leaves sudo unable to resolve the new name.
    await hostExec(H, `hostname ${H}`);
    expect((await ssh(H, 'sudo -n true')).stderr).toMatch(new RegExp(`sudo: unable to resolve host ${H}`));

    const check = await bootstrap(['--only', 'node-baseline', '--check', '--json'], { stateDir });
    expect(stopsOf(check)).toEqual([]);
    const planned = check.events.find((e) => e.type === 'step-end' && e.host === H && e.step === 'hostname');
    expect(planned.status).toBe('would-change');
    expect(JSON.stringify(planned.changes)).toContain('/etc/hosts');
    expect(JSON.stringify(planned.changes)).toContain(`+127.0.1.1\\t${H}`);

    const build = await bootstrap(['--only', 'node-baseline', '--json'], { stateDir });
    expect(stopsOf(build)).toEqual([]);
    expect(build.code).toBe(0);
    const done = await ssh(H, 'sudo -n true; hostname; cat /etc/hostname; getent hosts $(hostname)');
    expect(done.stderr).toBe('');
    expect(done.stdout).toBe(`${H}\n${H}\n127.0.1.1       ${H}\n`);
    expect(host(H).name).toBe(H);

    const rerun = await bootstrap(['--only', 'node-baseline', '--json'], { stateDir });
    const again = rerun.events.find((e) => e.type === 'step-end' && e.host === H && e.step === 'hostname');
    expect(again).toMatchObject({ status: 'ok', changes: [] });
  });
});
