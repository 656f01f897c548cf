// The twin's releases: each bundle claims its own k3s release (`--version`), carries its own etcd module
// lines as Go writes them, and no other release's; installTwin lays them out as artifacts folders.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTwin, releaseArtifacts } from '../../lab/twin/build.ts';
import { claimEtcdRelease } from '../../lab/twin/etcd/start-line.ts';
import { DEFAULT_TWIN_RELEASE, TWIN_RELEASES, etcdModuleLines, twinRelease } from '../../lab/twin/releases.ts';
import { K3S_VERSION as LAB_VERSION } from '../../lab/inventory.ts';

describe('twin releases', () => {
  it('are distinct k3s tags; the default one is the lab inventory version; at least one is on etcd 3.5.26+ and one on 3.6', () => {
    expect(new Set(TWIN_RELEASES.map((r) => r.version)).size).toBe(TWIN_RELEASES.length);
    expect(DEFAULT_TWIN_RELEASE.version).toBe(LAB_VERSION);
    const etcd = TWIN_RELEASES.map((r) => r.etcd.split('.').map(Number));
    expect(etcd.some(([a, b, c]) => a === 3 && b === 5 && c >= 26)).toBe(true);
    expect(etcd.some(([a, b]) => a === 3 && b === 6)).toBe(true);
    // the fork's tag is the etcd version plus -k3sN
    for (const r of TWIN_RELEASES) expect(r.etcdModule.replace).toMatch(new RegExp(`^v${r.etcd.replace(/\./g, '\\.')}-k3s\\d+$`));
    expect(() => twinRelease('v1.99.0+k3s1')).toThrow(/no twin release v1\.99\.0\+k3s1/);
  });

  it("writes the etcd module lines as Go's BuildInfo.String does for a replaced module", () => {
    expect(etcdModuleLines(twinRelease('v1.33.7+k3s3'))).toBe('dep\tgo.etcd.io/etcd/server/v3\tv3.6.7\n=>\tgithub.com/k3s-io/etcd/server/v3\tv3.5.26-k3s1\t\n');
  });

  it("rewrites etcd's start line to the release's etcd, git sha and Go, and no other line", () => {
    const debian =
      '{"level":"info","ts":"2026-01-01T00:00:00.000Z","caller":"embed/etcd.go:302","msg":"starting an etcd server","etcd-version":"3.4.23","git-sha":"Not provided (use ./build instead of go build)","go-version":"go1.19.8","go-os":"linux","name":"s1-0a1b2c3d"}';
    expect(claimEtcdRelease(debian, { etcd: '3.5.21', go: 'go1.24.6' })).toBe(
      '{"level":"info","ts":"2026-01-01T00:00:00.000Z","caller":"embed/etcd.go:302","msg":"starting an etcd server","etcd-version":"3.5.21","git-sha":"HEAD","go-version":"go1.24.6","go-os":"linux","name":"s1-0a1b2c3d"}',
    );
    const other = '{"level":"info","msg":"published local member to cluster through raft","etcd-version":"3.4.23"}';
    expect(claimEtcdRelease(other, { etcd: '3.5.21', go: 'go1.24.6' })).toBe(other);
  });
});

describe('installTwin', () => {
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'twin-releases-'));
    await installTwin(dir);
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('puts the default release at <artifacts>/k3s and every other one at <artifacts>/releases/<version>/k3s', () => {
    expect(releaseArtifacts(dir, DEFAULT_TWIN_RELEASE.version)).toBe(dir);
    expect(releaseArtifacts(dir, 'v1.34.1+k3s1')).toBe(join(dir, 'releases', 'v1.34.1+k3s1'));
    for (const r of TWIN_RELEASES) expect(existsSync(join(releaseArtifacts(dir, r.version), 'k3s'))).toBe(true);
  });

  it.each(TWIN_RELEASES.map((r) => [r.version, r] as const))(
    '%s: --version claims it, the file carries its etcd module lines and no other release',
    (_v, r) => {
      const k3s = join(releaseArtifacts(dir, r.version), 'k3s');
      expect(execFileSync(k3s, ['--version'], { encoding: 'utf8' })).toBe(`k3s version ${r.version} (${r.commit})\ngo version ${r.go}\n`);
      const bytes = readFileSync(k3s, 'latin1');
      expect(bytes).toContain(`\n${etcdModuleLines(r)}`);
      expect(bytes).toContain(`=>\tgithub.com/k3s-io/etcd/server/v3\tv${r.etcd}-k3s`);
      for (const o of TWIN_RELEASES.filter((x) => x !== r)) {
        expect(bytes).not.toContain(o.version);
        expect(bytes).not.toContain(o.etcdModule.replace);
      }
    },
  );
});
