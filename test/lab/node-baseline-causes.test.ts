// node-baseline's gates on real hosts: each cause the lab can produce, injected by a fault or by hand,
// named with the host and within seconds (read-only checks: --check is enough, and proves they run there).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { hostExec } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, paths } from '../support/lab.ts';
import { bootstrap, freshStateDir, stopsOf } from '../support/cluster.ts';
import { LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';

describeAsRoot('node-baseline names what is wrong with a host', () => {
  const stateDir = freshStateDir();
  const check = () => bootstrap(['--only', 'node-baseline', '--check', '--json'], { stateDir });

  beforeAll(async () => {
    await ensureLab();
  });

  // A full disk (DISK_LOW) and a lost default route (NO_DEFAULT_ROUTE) are rows of the lab fault matrix
  // (test/lab/fault-matrix.test.ts), injected at the run's start and healed there.

  it('a port k3s needs held by another program → PORT_IN_USE naming it', async () => {
    // Another program on the kubelet's port (the twins' private node: a stock host has no server tool to hand).
    await hostExec('k3s-lab-2', `systemd-run --unit=squatter ${LAB_TOOLS_DIR}/node -e "require('net').createServer().listen(10250)"`);
    try {
      await new Promise((res) => setTimeout(res, 1500));
      const r = await check();
      const stop = stopsOf(r).find((s) => s.cause === 'PORT_IN_USE');
      expect(stop).toMatchObject({ host: 'k3s-lab-2' });
      expect(stop.evidence.seen).toMatch(/:10250 is held by node, not by this host's k3s\.service/);
    } finally {
      await hostExec('k3s-lab-2', 'systemctl stop squatter; true');
    }
  });

  it('a program the engine runs missing on a host → TOOL_MISSING naming it and its package, nothing else; healed, the host passes', async () => {
    // `ss` hidden as if iproute2 had never been installed (renamed in the host's own disk)
    const ss = (await hostExec('k3s-lab-3', 'command -v ss')).stdout.trim();
    expect(ss).toMatch(/\/ss$/);
    await hostExec('k3s-lab-3', `mv ${ss} ${ss}.hidden`);
    try {
      const r = await check();
      expect(r.code).toBe(1);
      // the host's other checks are not judged without it (no "port" verdict from an ss that never ran)
      expect(stopsOf(r).filter((s) => s.host === 'k3s-lab-3')).toEqual([
        expect.objectContaining({
          cause: 'TOOL_MISSING',
          host: 'k3s-lab-3',
          evidence: expect.objectContaining({ command: 'command -v ss', seen: 'ss is not installed (Debian package iproute2: apt-get install iproute2)' }),
        }),
      ]);
      expect(r.stdout).toContain('apt-get install iproute2');
    } finally {
      await hostExec('k3s-lab-3', `mv ${ss}.hidden ${ss}`);
    }
    const healed = await check();
    expect(stopsOf(healed).filter((s) => s.host === 'k3s-lab-3')).toEqual([]);
  });

  it('a cloned machine-id → DUPLICATE_HOST_IDENTITY naming both hosts, before any change', async () => {
    const original = (await hostExec('k3s-lab-3', 'cat /etc/machine-id')).stdout.trim();
    const other = (await hostExec('k3s-lab-2', 'cat /etc/machine-id')).stdout.trim();
    await hostExec('k3s-lab-3', `echo ${other} > /etc/machine-id`);
    try {
      const r = await bootstrap(['--only', 'node-baseline', '--json'], { stateDir });
      const stop = stopsOf(r).find((s) => s.cause === 'DUPLICATE_HOST_IDENTITY');
      expect(stop.host).toBe('k3s-lab-2, k3s-lab-3');
      expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
    } finally {
      await hostExec('k3s-lab-3', `echo ${original} > /etc/machine-id`);
    }
  });

  // Local contracts the run checks before it changes anything: a binary of another release than the
  // inventory pins, and a token k3s would refuse. Each stops before the first step (no step-start).
  it('a k3s binary that is not the release k3s.version names → K3S_VERSION_MISMATCH, before any change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-version-'));
    const inventory = join(dir, 'lab.yaml');
    const text = readFileSync(paths.inventory, 'utf8');
    writeFileSync(inventory, text.replace(/version: v1\.33\.5\+k3s1/, 'version: v1.33.6+k3s1'));
    try {
      const r = await bootstrap(['--only', 'node-baseline', '--json'], { stateDir, inventory });
      const stop = stopsOf(r).find((s) => s.cause === 'K3S_VERSION_MISMATCH');
      expect(stop.evidence.seen).toContain('v1.33.5+k3s1');
      expect(stop.evidence.seen).toContain('v1.33.6+k3s1');
      expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
      expect(r.code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a malformed token in the state folder → TOKEN_MALFORMED naming the file, before any change', async () => {
    const own = freshStateDir();
    mkdirSync(join(own, 'lab'), { recursive: true, mode: 0o700 });
    // A CA hash of the wrong length: k3s says "invalid token CA hash length" (pkg/clientaccess/token.go).
    writeFileSync(join(own, 'lab', 'cluster-token.json'), JSON.stringify({ secret: 'K10abcdef::server:0123456789abcdef0123' }), { mode: 0o600 });
    const r = await bootstrap(['--until', 'k3s-founder', '--json'], { stateDir: own });
    const stop = stopsOf(r).find((s) => s.cause === 'TOKEN_MALFORMED');
    expect(JSON.stringify(stop)).toContain('cluster-token.json');
    expect(JSON.stringify(r.events)).not.toContain('0123456789abcdef0123');
    expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
    expect(r.code).toBe(1);
  });
});
