// The first half of a cold build, end to end in the lab: `bootstrap lab --until k3s-join` as an
// operator runs it, against real Debian hosts and the k3s twin on real etcd.
import { beforeAll, expect, it } from 'vitest';
import { fault } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hostExec, hosts } from '../support/lab.ts';
import { IMAGES_DIR, K3S_BIN } from '../../src/k3s/paths.ts';
import { bootstrap, freshStateDir, hostFingerprint, resetCluster, stopOf, voters } from '../support/cluster.ts';

// Every host of the lab (the shared lab has three servers and an agent): --check touches none of them.
const all = () => hosts().map((h) => h.name);

describeAsRoot('cold build up to the joins', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
  });

  it('--check before any run lists every change and touches nothing', async () => {
    const before = await Promise.all(all().map(hostFingerprint));
    const r = await bootstrap(['--until', 'k3s-join', '--check'], { stateDir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/k3s-lab-1 +k3s binary → \/usr\/local\/bin\/k3s: would change/);
    expect(r.stdout).toMatch(/would create \/etc\/rancher\/k3s\/config\.yaml \(mode 0600\)/);
    expect(r.stdout).toMatch(/would wait: founder's API ready/);
    expect(r.stdout).toMatch(/\d+ ok, \d+ would change/);
    expect(r.stdout).not.toMatch(/K10|token: [0-9a-f]{20}/);
    expect(await Promise.all(all().map(hostFingerprint))).toEqual(before);
  });

  it('builds the founder and joins two servers, one at a time, as etcd voters', async () => {
    const r = await bootstrap(['--until', 'k3s-join', '--json'], { stateDir });
    const stop = r.events.find((e) => e.type === 'stopped');
    expect(stop?.error, JSON.stringify(stop)).toBeUndefined();
    expect(r.code).toBe(0);
    expect(await voters()).toEqual({ 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' });
    // One at a time: lab-3's install starts only after lab-2's voter gate ended.
    const idx = (pred: (e: any) => boolean) => r.events.findIndex(pred);
    expect(idx((e) => e.type === 'gate-end' && e.host === 'k3s-lab-2' && e.status === 'ok')).toBeLessThan(
      idx((e) => e.type === 'step-start' && e.phase === 'k3s-join' && e.host === 'k3s-lab-3'),
    );
    const summary = r.events.at(-1).summary;
    expect(summary.changed).toBeGreaterThan(0);
  });

  it('a second run changes nothing', async () => {
    const r = await bootstrap(['--until', 'k3s-join'], { stateDir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+ ok, 0 changed/m);
  });

  it("a further run reads the uploads' sums from their stamps: the binary and the archives are hashed only when changed", async () => {
    // A sha256sum first in sudo's PATH (secure_path) that notes what it is asked to hash.
    const servers = hosts()
      .filter((h) => h.role === 'server')
      .map((h) => h.name);
    const shim = '/usr/local/sbin/sha256sum';
    const asked = '/run/sha256sum-asked';
    const archive = `${IMAGES_DIR}/cilium-images.tar`;
    await Promise.all(
      servers.map((h) => hostExec(h, `printf '#!/bin/sh\\necho "$*" >> ${asked}\\nexec /usr/bin/sha256sum "$@"\\n' > ${shim} && chmod 755 ${shim}`)),
    );
    try {
      // The same mode set again: the archive's ctime moves, its content does not.
      await hostExec(servers[1], `chmod 0644 ${archive}`);
      const r = await bootstrap(['--until', 'k3s-join'], { stateDir });
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^\d+ ok, 0 changed/m);
      const hashed = await Promise.all(servers.map(async (h) => (await hostExec(h, `cat ${asked} 2>/dev/null; true`)).stdout));
      expect(hashed.map((text) => text.split('\n').filter((l) => l.includes(K3S_BIN) || l.includes(IMAGES_DIR)))).toEqual(
        servers.map((h) => (h === servers[1] ? [`-- ${archive}`] : [])),
      );
    } finally {
      await Promise.all(servers.map((h) => hostExec(h, `rm -f ${shim} ${asked}`)));
    }
  });

  it('--check after it would change nothing and exits 0', async () => {
    const r = await bootstrap(['--until', 'k3s-join', '--check'], { stateDir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+ ok, 0 would change/m);
  });

  it("a fresh state folder against the running cluster is STATE_TOKEN_MISMATCH, and the founder's config is left alone", async () => {
    const founder = hosts()[0].name;
    const before = await hostFingerprint(founder);
    const config = async () => (await hostExec(founder, 'sha256sum /etc/rancher/k3s/config.yaml')).stdout;
    const was = await config();
    for (const check of [true, false]) {
      const r = await bootstrap(['--until', 'k3s-join', '--json', ...(check ? ['--check'] : [])], { stateDir: freshStateDir() });
      expect(stopOf(r), r.stdout).toMatchObject({ cause: 'STATE_TOKEN_MISMATCH', host: founder });
      expect(r.events.some((e) => e.type === 'step-end' && e.phase === 'k3s-founder' && e.status === 'changed')).toBe(false);
    }
    expect(await config()).toBe(was);
    expect(await hostFingerprint(founder)).toBe(before);
    expect(await voters()).toEqual({ 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' });
  });

  it('never prints or logs the cluster token', async () => {
    const { readFileSync, readdirSync, statSync } = await import('node:fs');
    const env = `${stateDir}/lab`;
    const token = JSON.parse(readFileSync(`${env}/cluster-token.json`, 'utf8'));
    expect(token.full).toMatch(/^K10[0-9a-f]{64}::server:/);
    expect((statSync(`${env}/cluster-token.json`).mode & 0o777).toString(8)).toBe('600');
    expect((statSync(`${env}/kubeconfig`).mode & 0o777).toString(8)).toBe('600');
    const logs = readdirSync(`${env}/runs`);
    expect(logs.length).toBeGreaterThan(2);
    for (const f of logs) {
      expect((statSync(`${env}/runs/${f}`).mode & 0o777).toString(8)).toBe('600');
      const log = readFileSync(`${env}/runs/${f}`, 'utf8');
      expect(log).not.toContain(token.secret);
      if (token.full) expect(log).not.toContain(token.full);
    }
  });

  it('stops with CLOCK_SKEW naming the host whose clock is off', async () => {
    await fault('k3s-lab-2', 'clock-skew', '30');
    try {
      const r = await bootstrap(['--only', 'node-baseline', '--json'], { stateDir });
      const stop = r.events.find((e) => e.type === 'stopped')?.error;
      expect(stop).toMatchObject({ cause: 'CLOCK_SKEW', host: 'k3s-lab-2' });
      // 30 s of skew, less the time between the fault and the probe (seconds on a loaded machine).
      expect(stop.evidence.seen).toMatch(/ahead of the operator's by (2[4-9]|3[01])\.\d s/);
      expect(r.code).toBe(1);
      expect(r.ms).toBeLessThan(60_000);
    } finally {
      await fault('k3s-lab-2', 'clock-skew', '0');
    }
  });
});
