// The path rules of a rolling change (src/k3s/upgrade-path.ts): what the operator sees when k3s.version is
// no step k3s supports from what the servers run, and nothing when it is.
import { describe, expect, it } from 'vitest';
import { etcdVersionIn, pathStops, releaseEtcd, type RunningRelease } from '../../src/k3s/upgrade-path.ts';

const on = (host: string, version: string, etcd?: string): RunningRelease => ({
  host,
  versionLine: `k3s version ${version} (8e8f2a47)`,
  ...(etcd && { etcd }),
});
const ids = (stops: ReturnType<typeof pathStops>) => stops.map((s) => s.causeId);

describe('the path from what the servers run to k3s.version', () => {
  it('lets a patch upgrade within a minor line through', () => {
    expect(pathStops([on('a', 'v1.33.5+k3s1', '3.5.21'), on('b', 'v1.33.5+k3s1', '3.5.21')], { version: 'v1.33.7+k3s3', etcd: '3.5.26' })).toEqual([]);
  });

  it('refuses a downgrade, naming the servers that run the newer release', () => {
    const stops = pathStops([on('a', 'v1.33.7+k3s3', '3.5.26'), on('b', 'v1.33.5+k3s1', '3.5.21')], { version: 'v1.33.5+k3s1', etcd: '3.5.21' });
    expect(ids(stops)).toEqual(['K3S_DOWNGRADE_REFUSED']);
    expect(stops[0].host).toBe('a');
    expect(stops[0].message).toContain('v1.33.5+k3s1 is older than what a runs');
  });

  it('counts a k3s build as newer: +k3s3 to +k3s1 of the same patch is a downgrade', () => {
    expect(ids(pathStops([on('a', 'v1.33.7+k3s3', '3.5.26')], { version: 'v1.33.7+k3s1', etcd: '3.5.25' }))).toEqual(['K3S_DOWNGRADE_REFUSED']);
  });

  it('refuses a skipped minor and names every minor line to go through', () => {
    const stops = pathStops([on('a', 'v1.32.9+k3s1', '3.5.21')], { version: 'v1.35.1+k3s1', etcd: '3.6.0' });
    expect(ids(stops)).toContain('K3S_MINOR_SKIPPED');
    const skipped = stops.find((s) => s.causeId === 'K3S_MINOR_SKIPPED')!;
    expect(skipped.message).toContain('skips v1.33, v1.34');
    expect(skipped.message).toContain('the latest v1.33.x, then the latest v1.34.x');
  });

  it('requires the etcd 3.5.26 waypoint before a release with etcd 3.6, naming the release to take', () => {
    const stops = pathStops([on('a', 'v1.33.5+k3s1', '3.5.21'), on('b', 'v1.33.7+k3s3', '3.5.26')], { version: 'v1.34.1+k3s1', etcd: '3.6.4' });
    expect(ids(stops)).toEqual(['ETCD_WAYPOINT_REQUIRED']);
    expect(stops[0].host).toBe('a');
    expect(stops[0].message).toContain('brings etcd 3.6.4; a runs etcd 3.5.21');
    expect(stops[0].message).toContain('v1.33.7+k3s3 or later');
  });

  it('lets a cluster already on etcd 3.5.26 move to etcd 3.6', () => {
    expect(pathStops([on('a', 'v1.33.7+k3s3', '3.5.26')], { version: 'v1.34.1+k3s1', etcd: '3.6.4' })).toEqual([]);
  });

  it('does not guess: an unknown etcd on either side stops only when the waypoint could matter', () => {
    expect(ids(pathStops([on('a', 'v1.33.5+k3s1')], { version: 'v1.34.2+k3s1', etcd: '3.6.5' }))).toEqual(['ETCD_VERSION_UNKNOWN']);
    expect(ids(pathStops([on('a', 'v1.33.5+k3s1', '3.5.21')], { version: 'v1.33.9+k3s1' }))).toEqual(['ETCD_VERSION_UNKNOWN']);
    expect(pathStops([on('a', 'v1.33.7+k3s3', '3.5.26')], { version: 'v1.33.9+k3s1' })).toEqual([]);
  });

  it('names a server whose k3s says no version', () => {
    const stops = pathStops([{ host: 'a', versionLine: '' }], { version: 'v1.33.7+k3s3', etcd: '3.5.26' });
    expect(ids(stops)).toEqual(['K3S_VERSION_UNKNOWN']);
  });
});

describe('which etcd a server or release has', () => {
  it('takes etcd’s own start line first, then the k3s-io fork’s module line, never the required version of a replaced module', () => {
    const journal = '"etcd-version":"3.5.21"';
    const modules = 'go.etcd.io/etcd/server/v3\tv3.6.7\ngithub.com/k3s-io/etcd/server/v3\tv3.5.26';
    expect(etcdVersionIn(`${journal}\n${modules}`)).toBe('3.5.21');
    expect(etcdVersionIn(modules)).toBe('3.5.26');
    expect(etcdVersionIn('go.etcd.io/etcd/server/v3\tv3.5.21')).toBe('3.5.21');
    expect(etcdVersionIn('nothing here')).toBeUndefined();
  });

  it('knows the releases of the release notes, and that v1.34 brings etcd 3.6', () => {
    expect(releaseEtcd('v1.33.5+k3s1')).toBe('3.5.21');
    expect(releaseEtcd('v1.33.7+k3s1')).toBe('3.5.25');
    expect(releaseEtcd('v1.33.7+k3s3')).toBe('3.5.26');
    expect(releaseEtcd('v1.34.1+k3s1')).toBe('3.6.4');
    expect(releaseEtcd('v1.35.0+k3s1')).toBe('3.6.0');
    expect(releaseEtcd('v1.33.9+k3s1')).toBeUndefined();
  });
});
