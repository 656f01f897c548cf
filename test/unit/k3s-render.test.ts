import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fromText } from '../../src/inventory/load.ts';
import { serverConfig, serverUnit } from '../../phases/k3s/render.ts';
import { matchJoinFailure } from '../../src/k3s/journal-causes.ts';
import { readFileSync } from 'node:fs';
import { serverRefs } from '../../src/inventory/hosts.ts';

const prod = fromText(readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8'), '/x/inventory/prod.yaml', '/home/ops');
const [founder, joiner] = serverRefs(prod);

describe('k3s config.yaml', () => {
  it('initialises the cluster on the founder and joins the others to the FOUNDER, not the VIP', () => {
    const f = parse(serverConfig(prod, founder, 's3cret'));
    const j = parse(serverConfig(prod, joiner, 'K10abc::server:s3cret'));
    expect(f['cluster-init']).toBe(true);
    expect(f.server).toBeUndefined();
    expect(j.server).toBe('https://192.168.2.10:6443');
    expect(j['cluster-init']).toBeUndefined();
  });

  it('carries the flags Cilium needs and every SAN', () => {
    const c = parse(serverConfig(prod, joiner, 't'));
    expect(c).toMatchObject({
      'node-ip': '192.168.2.11',
      'node-name': 'k3s-prod-2',
      'flannel-backend': 'none',
      'disable-network-policy': true,
      'disable-kube-proxy': true,
      disable: ['traefik', 'servicelb'],
      'cluster-cidr': '10.42.0.0/16',
      'service-cidr': '10.43.0.0/16',
    });
    expect(c['tls-san']).toEqual(['192.168.2.11', '192.168.2.9', '127.0.0.1']);
  });

  it('renders the unit k3s expects: notify, restart every 5 s, no start timeout', () => {
    const unit = serverUnit();
    for (const line of [
      'Type=notify',
      'Restart=always',
      'RestartSec=5s',
      'TimeoutStartSec=0',
      'KillMode=process',
      'Delegate=yes',
      'EnvironmentFile=-/etc/systemd/system/k3s.service.env',
      'ExecStart=/usr/local/bin/k3s server',
    ]) {
      expect(unit).toContain(line);
    }
  });
});

describe("naming a join failure from k3s's journal", () => {
  it.each([
    [
      'level=fatal msg="failed to get CA certs: Get \\"https://10.77.0.10:6443/cacerts\\": dial tcp 10.77.0.10:6443: connect: connection refused"',
      'JOIN_FOUNDER_UNREACHABLE',
    ],
    [
      'level=fatal msg="failed to get CA certs: Get \\"https://10.77.0.10:6443/cacerts\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"',
      'JOIN_FOUNDER_UNREACHABLE',
    ],
    [
      'level=info msg="Waiting to retrieve etcd cluster member list: failed to get MemberList from server: Internal error occurred: failed to get etcd MemberList: context deadline exceeded"',
      'ETCD_CLUSTER_UNHEALTHY',
    ],
    ['level=fatal msg="token CA hash does not match the Cluster CA certificate hash: 1a2b != 3c4d"', 'TOKEN_CA_MISMATCH'],
    ['etcd cluster join failed: cannot fetch cluster info from peer urls: could not retrieve cluster information', 'ETCD_PEER_UNREACHABLE'],
    ['rafthttp: dial tcp 10.77.0.10:2380: connect: connection refused', 'ETCD_PEER_UNREACHABLE'],
    ['level=fatal msg="etcd cluster join failed: etcdserver: unhealthy cluster"', 'ETCD_CLUSTER_UNHEALTHY'],
    ['etcdserver: too many learner members in cluster', 'ETCD_CLUSTER_UNHEALTHY'],
    [
      'level=fatal msg="Error: preparing server: failed to bootstrap cluster data: https://10.77.0.10:6443/v1-k3s/server-bootstrap: 401 Unauthorized"',
      'TOKEN_REJECTED',
    ],
    [
      'level=info msg="Waiting to retrieve agent configuration; server is not ready: failed to retrieve configuration from server: https://127.0.0.1:6444/v1-k3s/config: 401 Unauthorized"',
      'TOKEN_REJECTED',
    ],
    [
      'level=fatal msg="Error: preparing server: failed to bootstrap cluster data: failed to check if bootstrap data has been initialized: failed to validate token: invalid token CA hash length"',
      'TOKEN_MALFORMED',
    ],
    [
      'level=fatal msg="Error: preparing server: failed to bootstrap cluster data: failed to check if bootstrap data has been initialized: failed to validate token: invalid token format"',
      'TOKEN_MALFORMED',
    ],
    ['etcd cluster join failed: duplicate node name found, please use a unique name for this node', 'DUPLICATE_NODE_NAME'],
    ["Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry", 'NODE_PASSWORD_REJECTED'],
  ])('%s → %s', (line, id) => {
    expect(matchJoinFailure(`starting k3s\n${line}\nk3s exited`)?.id).toBe(id);
  });

  it('names the flag the operator changes, from a cli tag or a Go field path', () => {
    const journal =
      'msg="critical configuration mismatched: ClusterIPRanges.slice[0].IP"\nmsg="critical configuration mismatched: ClusterIPRange.IP"\nmsg="failed to validate server configuration: critical configuration value mismatch between servers"';
    expect(matchJoinFailure(journal)).toMatchObject({ id: 'CRITICAL_CONFIG_MISMATCH', detail: 'cluster-cidr' });
    expect(matchJoinFailure('msg="critical configuration mismatched: ServiceIPRange.Mask.slice[2]"')?.detail).toBe('service-cidr');
    expect(matchJoinFailure('msg="critical configuration mismatched: ClusterDNSs.slice[0]"')?.detail).toBe('cluster-dns');
    // Another service-cidr moves the derived cluster DNS too, which k3s names first: the flag set is service-cidr.
    const svc = ['ClusterDNSs.slice[0]', 'cluster-dns', 'ServiceIPRange.IP', 'ServiceIPRanges.slice[0].IP']
      .map((n) => `time="x" level=error msg="critical configuration mismatched: ${n}"`)
      .join('\n');
    expect(matchJoinFailure(svc)).toEqual({
      id: 'CRITICAL_CONFIG_MISMATCH',
      line: 'time="x" level=error msg="critical configuration mismatched: ServiceIPRange.IP"',
      detail: 'service-cidr',
      transient: undefined,
    });
    expect(matchJoinFailure('msg="critical configuration mismatched: disable-service-lb"')?.detail).toBe('disable: [servicelb]');
    expect(matchJoinFailure('msg="critical configuration mismatched: flannel-backend"')?.detail).toBe('flannel-backend');
    expect(matchJoinFailure('unable to join cluster due to critical configuration value mismatch')).toMatchObject({ id: 'CRITICAL_CONFIG_MISMATCH' });
  });

  it("marks etcd's refusals transient (k3s retries them) and reads only the last attempt", () => {
    expect(matchJoinFailure('etcdserver: unhealthy cluster')).toMatchObject({ id: 'ETCD_CLUSTER_UNHEALTHY', transient: true });
    const cleared =
      'level=info msg="Starting k3s v1.33.5+k3s1"\nfatal msg="etcd cluster join failed: etcdserver: unhealthy cluster"\nlevel=info msg="Starting k3s v1.33.5+k3s1"\nWaiting for this server to be promoted';
    expect(matchJoinFailure(cleared)).toBeUndefined();
  });

  it("does not take a joining server's skipped config validation alone for a rejected token", () => {
    // compareConfig asks as user "node": with a separate agent token that request can fail while the join succeeds.
    expect(
      matchJoinFailure('level=warning msg="Skipping cluster configuration validation: https://10.0.0.11:6443/v1-k3s/config: 401 Unauthorized"'),
    ).toBeUndefined();
  });

  it('matches every recorded upstream k3s failure line', () => {
    const lines = readFileSync(new URL('../fixtures/upstream-lines/k3s.txt', import.meta.url), 'utf8').split('\n');
    // Every failure line (not the start, version, snapshot, etcd-join or kubectl lines the file records for other matchers).
    const notFailures =
      /msg="Starting k3s v|^k3s version v|msg="Snapshot \S+ saved\.|^Error from server \(NotFound\)|Skipping cluster configuration|msg="Starting etcd to join cluster with members/;
    for (const line of lines.filter((l) => l.trim() && !l.startsWith('#') && !notFailures.test(l))) {
      expect(matchJoinFailure(line), line).toBeDefined();
    }
  });

  it("forgets etcd's refusals once k3s, retrying in-process, started its member", () => {
    const waiting = 'level=info msg="Waiting for other members to finish joining etcd cluster: etcdserver: too many learner members in cluster"';
    expect(matchJoinFailure(`level=info msg="Starting k3s v1.33.5+k3s1"\n${waiting}`)).toMatchObject({ id: 'ETCD_CLUSTER_UNHEALTHY', transient: true });
    expect(
      matchJoinFailure(
        `level=info msg="Starting k3s v1.33.5+k3s1"\n${waiting}\nlevel=info msg="Starting etcd to join cluster with members [a-1=https://10.0.0.11:2380 b-2=https://10.0.0.12:2380]"`,
      ),
    ).toBeUndefined();
  });

  it('names nothing in a healthy journal', () => {
    expect(matchJoinFailure('Starting k3s\nk3s is up and running\n')).toBeUndefined();
  });
});
