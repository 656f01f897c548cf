// The pure parts of verify: Nodes and their conditions, etcd's member list against the servers, the API
// answers per vantage, the Cilium status; the table row as printed; the command line.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import { plainRenderer } from '../../src/view/plain.ts';
import { apiVerdict } from '../../phases/verify/api-verdict.ts';
import { kprMode, kprOn } from '../../phases/verify/cilium-health.ts';
import { CILIUM_AGENT_COMMAND, agentLooks } from '../../phases/verify/checks.ts';
import { lastLine } from '../../phases/verify/read.ts';
import { compareMembers, memberOfNode, mismatchLine, parseMembers, readMembers } from '../../src/k3s/etcd-members.ts';
import { describeStranger, notInInventory, parseNodes, readiness } from '../../src/k3s/nodes.ts';

const node = (name: string, ready: string, voter?: string, message = '') => ({
  metadata: { name },
  status: {
    conditions: [
      { type: 'Ready', status: ready, reason: ready === 'True' ? 'KubeletReady' : 'KubeletNotReady', message },
      ...(voter ? [{ type: 'EtcdIsVoter', status: voter, message: voter === 'True' ? '' : 'Node is not a member of the etcd cluster' }] : []),
    ],
  },
});
const nodesJson = (...items: object[]) => JSON.stringify({ items });
const SERVERS = [
  { name: 's1', address: '10.0.0.11' },
  { name: 's2', address: '10.0.0.12' },
  { name: 's3', address: '10.0.0.13' },
];
// k3s's /db/info, as Go's encoding/json writes etcd's members: IDs are uint64 numbers larger than 2^53.
const memberList = (extra = '') => `{"members":[
{"ID":9372538179322589801,"name":"s1-1a2b3c4d","peerURLs":["http://10.0.0.11:2380"],"clientURLs":["http://10.0.0.11:2379"]},
{"ID":10501334649042878790,"name":"s2-5e6f7a8b","peerURLs":["http://10.0.0.12:2380"],"clientURLs":["http://10.0.0.12:2379"]},
{"ID":18249187646912138824,"name":"s3-9c0d1e2f","peerURLs":["http://10.0.0.13:2380"],"clientURLs":["http://10.0.0.13:2379"]}${extra}]}`;

describe('nodes', () => {
  it('reads Ready and EtcdIsVoter, and names a node that is not Ready or never registered', () => {
    const nodes = parseNodes(nodesJson(node('s1', 'True', 'True'), node('s2', 'False', 'True', 'container runtime network not ready')));
    expect(nodes[0]).toMatchObject({ name: 's1', ready: { status: 'True' }, etcdVoter: { status: 'True' } });
    expect(readiness(nodes, ['s1', 's2', 'a1'])).toEqual([
      { host: 's1', ok: true, detail: 'Ready' },
      { host: 's2', ok: false, detail: 'Ready=False KubeletNotReady: container runtime network not ready' },
      { host: 'a1', ok: false, detail: 'no Node object: the node never registered' },
    ]);
  });
});

describe('Nodes the inventory does not list', () => {
  it('are named with their role, readiness and last report; the inventory`s own are not', () => {
    const retired = {
      metadata: { name: 's4', labels: { 'node-role.kubernetes.io/control-plane': 'true' } },
      status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', lastHeartbeatTime: '2026-12-01T09:12:44Z' }] },
    };
    const nodes = parseNodes(nodesJson(node('s1', 'True', 'True'), retired, node('w9', 'True')));
    const strangers = notInInventory(nodes, ['s1', 's2', 's3']);
    expect(strangers.map(describeStranger)).toEqual([
      'a server Node not in the inventory (Ready=Unknown, last report 2026-12-01T09:12:44Z)',
      'an agent Node not in the inventory (Ready=True)',
    ]);
    expect(notInInventory(nodes, ['s1', 's4', 'w9'])).toEqual([]);
  });

  it("tell their etcd member by k3s's name for it (<node>-<8 hex>), not by a prefix of another name", () => {
    const [m] = parseMembers(memberList()).filter((x) => x.name.startsWith('s1'));
    expect(memberOfNode(m, 's1')).toBe(true);
    expect(memberOfNode(m, 's')).toBe(false);
    expect(memberOfNode({ ...m, name: '' }, 's1')).toBe(false);
  });
});

describe('etcd members', () => {
  it('keeps uint64 ids exact (hex, as etcdctl member remove takes them)', () => {
    expect(parseMembers(memberList()).map((m) => m.id)).toEqual(['8211f1d0f64f3269', '91bc3c398fb3c146', 'fd422379fda50e48']);
  });

  it('reads a member list only from an answer that is one (no invented voters)', () => {
    expect(readMembers({ code: 0, stdout: memberList() })?.map((m) => m.name)).toEqual(['s1-1a2b3c4d', 's2-5e6f7a8b', 's3-9c0d1e2f']);
    expect(readMembers({ code: 1, stdout: '' })).toBeUndefined();
    expect(readMembers({ code: 0, stdout: 'ok' })).toBeUndefined();
    expect(readMembers({ code: 0, stdout: '{"kind":"Status"}' })).toBeUndefined();
  });

  it('three started voters on the servers match', () => {
    const v = compareMembers(parseMembers(memberList()), SERVERS);
    expect(Object.keys(v.voters)).toEqual(['s1', 's2', 's3']);
    expect(mismatchLine(v)).toBe('');
  });

  it('lists an extra member (an unstarted learner of no server)', () => {
    const v = compareMembers(parseMembers(memberList(',{"ID":1234,"name":"","peerURLs":["http://10.0.0.99:2380"],"isLearner":true}')), SERVERS);
    expect(v.missing).toEqual([]);
    expect(mismatchLine(v)).toBe('extra: (unstarted) 4d2 http://10.0.0.99:2380 learner');
  });

  it('lists the missing servers: absent, still a learner, or EtcdIsVoter False', () => {
    const doc = JSON.parse(memberList().replace(/"ID":(\d+)/g, '"ID":"$1"'));
    doc.members = doc.members.slice(0, 2);
    doc.members[1].isLearner = true;
    const v = compareMembers(parseMembers(JSON.stringify(doc)), SERVERS, parseNodes(nodesJson(node('s1', 'True', 'False'))));
    expect(v.missing.map((m) => m.server)).toEqual(['s1', 's2', 's3']);
    expect(mismatchLine(v)).toBe(
      'missing: s1 (EtcdIsVoter=False: Node is not a member of the etcd cluster), s2 (member 91bc3c398fb3c146 is still a learner), s3 (not in the member list)',
    );
  });

  it('a rebuilt server at another address is found by its member name, a stranger at its old address is not', () => {
    const moved = memberList().replace('http://10.0.0.13:2380', 'http://10.0.0.33:2380');
    const v = compareMembers(parseMembers(moved), SERVERS);
    expect(Object.keys(v.voters)).toEqual(['s1', 's2', 's3']);
    expect(v.extra).toEqual([]);
    const stranger = compareMembers(parseMembers(memberList(',{"ID":77,"name":"old-s9-00aa11bb","peerURLs":["http://10.0.0.99:2380"]}')), SERVERS);
    expect(stranger.extra.map((m) => m.name)).toEqual(['old-s9-00aa11bb']);
  });
});

describe('API answers per vantage', () => {
  const targets = [
    { key: 'vip', label: 'VIP 10.0.0.9', address: '10.0.0.9' },
    { key: 's0', label: 's1 10.0.0.11', address: '10.0.0.11', owner: 's1' },
    { key: 's1', label: 's2 10.0.0.12', address: '10.0.0.12', owner: 's2' },
  ];
  const ok = { stdout: 'ok', stderr: '', code: 0 };
  const refused = { stdout: '', stderr: 'The connection to the server 10.0.0.12:6443 was refused - did you specify the right host or port?', code: 1 };

  it('one cause per failing address, on its owner, naming the address and every vantage', () => {
    const v = apiVerdict(targets, 6443, [
      { vantage: 's1', results: { vip: ok, s0: ok, s1: refused } },
      { vantage: 's2', results: { vip: ok, s0: ok, s1: refused } },
    ]);
    expect(v.rows).toEqual([
      { host: 's1', ok: false, detail: `not ready via s2 10.0.0.12: ${refused.stderr}` },
      { host: 's2', ok: false, detail: `not ready via s2 10.0.0.12: ${refused.stderr}` },
    ]);
    expect(v.stops).toHaveLength(1);
    expect(v.stops[0]).toMatchObject({
      causeId: 'API_UNREACHABLE_VIA',
      host: 's2',
      message: "The API is not ready via 10.0.0.12:6443 (s2's own address) from s1, s2",
    });
    expect(v.stops[0].evidence.seen).toContain('https://10.0.0.12:6443/readyz from s1: The connection to the server');
  });

  it('the VIP failing is named on the vantage; all answering is a row of ok per vantage', () => {
    const down = apiVerdict(targets, 6443, [{ vantage: 's2', results: { vip: { stdout: '', stderr: '', code: null }, s0: ok, s1: ok } }]);
    expect(down.stops[0]).toMatchObject({ host: 's2', message: 'The API is not ready via 10.0.0.9:6443 (the VIP) from s2' });
    const fine = apiVerdict(targets, 6443, [{ vantage: 's1', results: { vip: ok, s0: ok, s1: ok } }]);
    expect(fine).toEqual({ rows: [{ host: 's1', ok: true, detail: 'ready via VIP 10.0.0.9, s1 10.0.0.11, s2 10.0.0.12' }], stops: [] });
  });
});

describe('Cilium status', () => {
  it("reads the agent's kube-proxy replacement mode from /v1/healthz", () => {
    expect(kprMode('{"kubernetes":{"state":"Ok"},"kube-proxy-replacement":{"mode":"True"}}')).toBe('True');
    expect(kprOn('True')).toBe(true);
    expect(kprOn(kprMode('{"kube-proxy-replacement":{"mode":"False"}}'))).toBe(false);
    expect(kprMode('curl: (7) Failed to connect')).toBeUndefined();
  });
});

describe("the agent's status and health probe in one exec", () => {
  // A stand-in `k3s` on the PATH: `crictl exec --name … --state running -q CMD…` runs CMD on this machine when a
  // container is given, where cilium-dbg and cilium-health are scripts printing what each case wants; with none
  // it answers as crictl does (its error logged, exec's help on stdout, exit 0).
  const dir = mkdtempSync(join(tmpdir(), 'agent-looks-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tool = (name: string, body: string) => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  const agent = (o: { id?: string; exec?: string; status: string; health: string }) => {
    const none = `echo 'NAME:'; echo '   crictl exec - Run a command in a running container'; echo 'time="2026-12-01T10:00:00Z" level=error msg="No containers found per filter flags"' >&2; exit 0`;
    tool('k3s', o.id ? `[ "$2 $3 $4 $5 $6 $7" = 'exec --name cilium-agent --state running -q' ] || exit 9; shift 7; ${o.exec ?? 'exec "$@"'}` : none);
    tool('cilium-dbg', o.status);
    tool('cilium-health', o.health);
    const r = spawnSync('sh', ['-c', CILIUM_AGENT_COMMAND], { env: { PATH: `${dir}:/usr/bin:/bin` }, encoding: 'utf8' });
    return agentLooks({ stdout: r.stdout, stderr: r.stderr, code: r.status });
  };

  it('each look as the command alone answers: its output byte for byte, its stderr, its exit code', () => {
    const looks = agent({
      id: '6f1c2d3e\n',
      status: `printf '{"kube-proxy-replacement":{"mode":"True"}}'; echo 'level=warning msg=slow' >&2`,
      health: `echo 'Cannot get status/probe: Put "http://localhost/v1beta/status/probe": context deadline exceeded' >&2; exit 1`,
    });
    expect(looks.status).toEqual({ stdout: '{"kube-proxy-replacement":{"mode":"True"}}', stderr: 'level=warning msg=slow\n', code: 0 });
    expect(kprMode(looks.status.stdout)).toBe('True');
    expect(looks.health).toEqual({
      stdout: '',
      stderr: 'Cannot get status/probe: Put "http://localhost/v1beta/status/probe": context deadline exceeded\n',
      code: 1,
    });
    expect(lastLine(looks.health)).toBe('Cannot get status/probe: Put "http://localhost/v1beta/status/probe": context deadline exceeded');
  });

  it('no running agent container, or the exec refused: both looks say so, with the exit code', () => {
    const none = agent({ status: 'exit 0', health: 'exit 0' });
    for (const r of [none.status, none.health]) {
      expect(r.code).toBe(1);
      expect(lastLine(r)).toBe('no running cilium-agent container on this node (k3s crictl exec --name cilium-agent --state running)');
      expect(r.stderr).toContain('level=error msg="No containers found per filter flags"');
      expect(r.stdout).toBe('');
    }
    const refused = agent({
      id: 'deadbeef',
      exec: `echo 'time="2026-12-01T10:00:00Z" level=fatal msg="execing command in container deadbeef: not found"' >&2; exit 1`,
      status: 'exit 0',
      health: 'exit 0',
    });
    expect(refused.status).toEqual(refused.health);
    expect(refused.status.code).toBe(1);
    expect(lastLine(refused.status)).toMatch(/level=fatal msg="execing command in container deadbeef: not found"$/);
  });

  it('cut short after the status (the exec killed): the status stands, the probe has what it printed and no status', () => {
    const f = '::bootstrap-cilium-agent::';
    const looks = agentLooks({
      stdout: `${f} B status\n{}\n${f} E status 0\n${f} B health\n{"nod`,
      stderr: `${f} B status\n\n${f} E status\n${f} B he`,
      code: null,
    });
    expect(looks.status).toEqual({ stdout: '{}', stderr: '', code: 0 });
    expect(looks.health).toEqual({ stdout: '{"nod', stderr: '', code: null });
  });
});

describe('the table and the command line', () => {
  it('prints one row per host and check', () => {
    const lines: string[] = [];
    const emit = plainRenderer((l) => lines.push(l));
    const row = (host: string, ok: boolean, detail: string): EngineEvent => ({
      type: 'check',
      phase: 'verify',
      check: 'nodes-ready',
      title: 'node Ready',
      host,
      ok,
      detail,
    });
    emit(row('s1', true, 'Ready'));
    emit(row('s2', false, 'Ready=False KubeletNotReady'));
    expect(lines).toEqual(['  s1  node Ready: ok (Ready)', '  s2  node Ready: FAILED (Ready=False KubeletNotReady)']);
  });

  it('bootstrap verify <env> [--drill]; --drill belongs to verify only', () => {
    expect(parseCommand(['verify', 'lab'])).toEqual({ kind: 'verify', env: 'lab', inventory: undefined, drill: false, json: false });
    expect(parseCommand(['verify', 'lab', '--drill', '--json'])).toMatchObject({ kind: 'verify', drill: true, json: true });
    expect(() => parseCommand(['lab', '--drill'])).toThrow(/--drill belongs to bootstrap verify/);
    expect(() => parseCommand(['plan', 'lab', '--drill'])).toThrow(/--drill belongs to bootstrap verify/);
    expect(() => parseCommand(['verify', 'lab', '--check'])).toThrow(/--check belongs to a run/);
  });
});
