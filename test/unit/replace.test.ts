import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseCommand } from '../../cli/args.ts';
import { replacePhases, replaceRun, replaceTopology } from '../../modes/replace.ts';
import { CauseError, UsageError } from '../../src/errors.ts';
import { fromText } from '../../src/inventory/load.ts';
import { serverRefs, topologyOf } from '../../src/inventory/hosts.ts';
import { joinKeyFor } from '../../phases/k3s/join-mode.ts';
import { serverConfig } from '../../phases/k3s/render.ts';
import { QUORUM_SETTLE_MS, checkQuorum, quorumVerdict, replaceFacts, type ReplaceFacts } from '../../phases/k3s/replace-quorum.ts';
import { allPhases, recoveryPhases } from '../../phases/index.ts';
import type { ReadContext, RunContext } from '../../src/engine/context.ts';
import type { Phase } from '../../src/engine/phase.ts';
import { Facts } from '../../src/engine/facts.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import { deleteOldNode, wipeOldState } from '../../phases/k3s/replace-steps.ts';

const inv = fromText(
  [
    'environment: prod',
    'ssh: { user: ops, identityFile: ~/.ssh/id_ed25519 }',
    'k3s: { version: v1.33.5+k3s1, artifacts: ../artifacts/k3s }',
    'controlPlane: { vip: 192.168.2.9 }',
    'network: { nodeCidr: 192.168.2.0/24 }',
    'servers:',
    '  - { name: k3s-prod-1, address: 192.168.2.10, founder: true }',
    '  - { name: k3s-prod-2, address: 192.168.2.11 }',
    '  - { name: k3s-prod-3, address: 192.168.2.12 }',
    'agents:',
    '  - { name: worker-1, address: 192.168.2.40 }',
  ].join('\n'),
  '/x/inventory/prod.yaml',
  '/home/ops',
);
const member = (name: string, ip: string, id: string) => ({ id, name, peerURLs: [`https://${ip}:2380`], isLearner: false });
const three = [
  member('k3s-prod-1-aaaaaaaa', '192.168.2.10', 'a1'),
  member('k3s-prod-2-bbbbbbbb', '192.168.2.11', 'b2'),
  member('k3s-prod-3-cccccccc', '192.168.2.12', 'c3'),
];
const two = { name: 'k3s-prod-2', address: '192.168.2.11' };

describe('--replace: the quorum of the other servers', () => {
  it('goes on when the other servers are a majority of the members, through the first that answers', () => {
    const v = quorumVerdict(two, 3, [
      { name: 'k3s-prod-1', members: three, nodePresent: true },
      { name: 'k3s-prod-3', members: three, nodePresent: true },
    ]);
    expect(v.stop).toBeUndefined();
    expect(v.facts).toEqual({ via: 'k3s-prod-1', nodePresent: true, orphanMembers: [], memberCount: 3 });
  });

  it('refuses with QUORUM_AT_RISK when only one of three answers, naming each server and what it showed', () => {
    const v = quorumVerdict(two, 3, [
      { name: 'k3s-prod-1', down: 'API not ready (etcd failed)' },
      { name: 'k3s-prod-3', down: 'not reachable (SSH_UNREACHABLE)' },
    ]);
    expect(v.stop?.causeId).toBe('QUORUM_AT_RISK');
    expect(v.stop?.message).toBe('Only 0 of the other servers answer; 2 of 3 etcd members are needed to replace k3s-prod-2');
    expect(v.stop?.evidence.seen).toBe('k3s-prod-1: API not ready (etcd failed); k3s-prod-3: not reachable (SSH_UNREACHABLE)');
    expect(
      quorumVerdict(two, 3, [
        { name: 'k3s-prod-1', members: three, nodePresent: true },
        { name: 'k3s-prod-3', down: 'x' },
      ]).stop?.causeId,
    ).toBe('QUORUM_AT_RISK');
  });

  it("counts etcd's members, not the inventory: an extra stale member raises the majority needed", () => {
    const four = [...three, member('old-4-dddddddd', '192.168.2.14', 'd4')];
    const v = quorumVerdict(two, 3, [
      { name: 'k3s-prod-1', members: four, nodePresent: true },
      { name: 'k3s-prod-3', members: four, nodePresent: true },
    ]);
    expect(v.stop?.message).toContain('3 of 4 etcd members are needed');
  });

  it("finds the replaced server's member left behind when its Node is already gone", () => {
    const v = quorumVerdict(two, 3, [
      { name: 'k3s-prod-1', members: three, nodePresent: false },
      { name: 'k3s-prod-3', members: three, nodePresent: false },
    ]);
    expect(v.facts?.orphanMembers.map((m) => m.id)).toEqual(['b2']);
  });
});

describe('--replace: the founder role for this run', () => {
  const hostsOf = (replaced: string, id: string) =>
    allPhases()
      .find((p) => p.id === id)!
      .hosts({ inventory: inv, topology: replaceTopology(inv, replaced) })
      .map((h) => h.name);

  it('stays where it is when another server is replaced', () => {
    expect(replaceTopology(inv, 'k3s-prod-2')).toEqual({ ...topologyOf(inv), replacing: 'k3s-prod-2' });
    expect(hostsOf('k3s-prod-2', 'k3s-founder')).toEqual(['k3s-prod-1']);
  });

  it('moves to the first other server for the k3s phases when the founder is replaced: the old founder joins it, never cluster-init', () => {
    expect(hostsOf('k3s-prod-1', 'k3s-founder')).toEqual(['k3s-prod-2']);
    expect(hostsOf('k3s-prod-1', 'k3s-join')).toEqual(['k3s-prod-1', 'k3s-prod-3']);
    // Once it has joined, the founder is the founder again for what follows.
    expect(hostsOf('k3s-prod-1', 'cilium')).toEqual(['k3s-prod-1']);
    const topology = replaceTopology(inv, 'k3s-prod-1');
    const old = topology.joiners.find((h) => h.name === 'k3s-prod-1')!;
    const config = parse(
      serverConfig(inv, old, 't', joinKeyFor({ replacing: topology.replacing, target: topology.joinTarget, host: old, datastore: '', joinLine: '' })),
    );
    expect(config.server).toBe('https://192.168.2.11:6443');
    expect(config['cluster-init']).toBeUndefined();
  });

  it("puts the replaced server's steps first in k3s-join, and only a replace run has them", () => {
    const joinSteps = (phases: Phase[]) => phases.find((p) => p.id === 'k3s-join')!.steps.map((s) => s.id);
    expect(joinSteps(replacePhases(recoveryPhases()))).toEqual(['replace-node', 'replace-wipe', 'binary', 'images', 'config', 'unit', 'env', 'service']);
    expect(joinSteps(allPhases())).toEqual(['binary', 'images', 'config', 'unit', 'env', 'service']);
    const topology = replaceTopology(inv, 'k3s-prod-2');
    const ctx = { inventory: inv, topology } as unknown as ReadContext;
    for (const step of [deleteOldNode, wipeOldState])
      expect(topology.joiners.filter((h) => step.appliesTo!(h, ctx)).map((h) => h.name)).toEqual(['k3s-prod-2']);
  });

  it('refuses a name that is not a server', () => {
    const sel = { check: true, resume: false };
    expect(() => replaceRun(inv, 'k3s-prod-9', sel)).toThrow(
      '--replace k3s-prod-9: not a server of the inventory (servers: k3s-prod-1, k3s-prod-2, k3s-prod-3)',
    );
    expect(() => replaceRun(inv, 'worker-1', sel)).toThrow(/an agent holds no etcd member/);
  });
});

describe('how a server joins: kept once it holds a datastore', () => {
  const [founder, joiner] = serverRefs(inv);
  const key = (host = founder, datastore = '', joinLine = '', replacing = false) =>
    joinKeyFor({ target: topologyOf(inv).joinTarget, ...(replacing && { replacing: host.name }), host, datastore, joinLine });

  it('by role on a fresh server', () => {
    expect(key(founder)).toEqual({ 'cluster-init': true });
    expect(key(joiner)).toEqual({ server: 'https://192.168.2.10:6443' });
  });

  it('as its config says once it has data: a rebuilt founder that joined a survivor keeps server:', () => {
    expect(key(founder, 'present\n', 'server: https://192.168.2.11:6443\n')).toEqual({ server: 'https://192.168.2.11:6443' });
    expect(key(joiner, 'present\n', 'cluster-init: true\n')).toEqual({ 'cluster-init': true });
    expect(key(founder, 'present\n', '')).toEqual({ 'cluster-init': true });
  });

  it('by role again for the server being replaced (its data is wiped before it joins)', () => {
    expect(key(joiner, 'present\n', 'server: https://192.168.2.12:6443\n', true)).toEqual({ server: 'https://192.168.2.10:6443' });
  });
});

describe('--replace on the command line', () => {
  it('is a run option', () => {
    expect(parseCommand(['prod', '--replace', 'k3s-prod-2', '--check'])).toMatchObject({ kind: 'run', env: 'prod', replace: 'k3s-prod-2', check: true });
    expect(parseCommand(['prod'])).not.toHaveProperty('replace');
  });

  it('refuses selections that would skip the replace, and other commands', () => {
    expect(() => parseCommand(['prod', '--replace', 'k3s-prod-2', '--from', 'kube-vip'])).toThrow(UsageError);
    expect(() => parseCommand(['prod', '--replace', 'k3s-prod-2', '--only', 'verify'])).toThrow(
      '--replace runs from the first phase: it cannot be combined with --only',
    );
    expect(() => parseCommand(['verify', 'prod', '--replace', 'k3s-prod-2'])).toThrow('--replace belongs to a run');
  });
});

describe('the replaced server in k3s-join (plans, pure)', () => {
  const [, joiner, third] = serverRefs(inv);
  const ctxWith = (replace: string | undefined, facts?: ReplaceFacts) => {
    const f = new Facts();
    if (facts) f.setRun([replaceFacts(facts)]);
    return { inventory: inv, topology: { ...topologyOf(inv), ...(replace && { replacing: replace }) }, facts: f } as unknown as RunContext;
  };
  const facts = { via: 'k3s-prod-1', nodePresent: true, orphanMembers: [], memberCount: 3 };

  it('deletes the Node through a survivor, never forced, and says where the server joins', () => {
    const plan = deleteOldNode.plan({ host: joiner, probe: {}, local: undefined, ctx: ctxWith('k3s-prod-2', facts) });
    expect(plan.changes).toHaveLength(1);
    const change = plan.changes[0] as ActionChange;
    expect(change.description).toContain('delete Node k3s-prod-2 through k3s-prod-1 (never forced');
    expect(change.description).toContain('k3s-prod-2 then joins https://192.168.2.10:6443 as a new member');
    // It runs on the survivor, and lists the delete and the wait for the member to go.
    expect(change.on).toBe('k3s-prod-1');
    expect(change.runs[0]).toBe(
      "DELETE /api/v1/nodes/k3s-prod-2   (Kubernetes API through the SSH connection to k3s-prod-1; without the state folder's kubeconfig: sudo k3s kubectl delete node k3s-prod-2 --ignore-not-found --timeout=90s there)",
    );
    expect(change.runs[1]).toContain('GET /db/info');
    expect(change.runs[1]).toContain('sudo k3s kubectl get --raw /db/info');
    expect(change.runs.join('\n')).not.toMatch(/--force|--grace-period/);
  });

  it('plans nothing on the other servers, nor when the Node is already gone', () => {
    expect(deleteOldNode.plan({ host: third, probe: {}, local: undefined, ctx: ctxWith('k3s-prod-2', facts) }).changes).toEqual([]);
    expect(deleteOldNode.plan({ host: joiner, probe: {}, local: undefined, ctx: ctxWith(undefined) }).changes).toEqual([]);
    expect(deleteOldNode.plan({ host: joiner, probe: {}, local: undefined, ctx: ctxWith('k3s-prod-2', { ...facts, nodePresent: false }) }).changes).toEqual([]);
  });

  it('stops with ETCD_MEMBER_NOT_REMOVED when a member of the server is left without its Node', () => {
    const orphan = { ...facts, nodePresent: false, orphanMembers: [member('k3s-prod-2-bbbbbbbb', '192.168.2.11', 'b2')] };
    const plan = deleteOldNode.plan({ host: joiner, probe: {}, local: undefined, ctx: ctxWith('k3s-prod-2', orphan) });
    expect(plan.stops?.map((s) => s.causeId)).toEqual(['ETCD_MEMBER_NOT_REMOVED']);
  });

  it('stops everything k3s started as k3s-killall.sh does, then wipes what the host still holds of its old membership', () => {
    const probe = (present: string, active: string, shims = '0') => ({
      present: { stdout: present, stderr: '', code: 0 },
      active: { stdout: active, stderr: '', code: 0 },
      shims: { stdout: `${shims}\n`, stderr: '', code: 0 },
    });
    const plan = wipeOldState.plan({
      host: joiner,
      probe: probe('/var/lib/rancher/k3s\n/run/k3s\n', 'inactive\n', '2'),
      local: undefined,
      ctx: ctxWith('k3s-prod-2', facts),
    });
    const [kill, wipe] = plan.changes as { description: string; command: string }[];
    expect(kill.description).toBe(
      'stop k3s and everything it started as k3s-killall.sh does (2 container shims and their processes, their mounts, CNI links, the VIP if held)',
    );
    expect(kill.command).toMatch(/^systemctl stop k3s\.service; systemctl kill --signal=KILL k3s\.service 2>\/dev\/null; /);
    // The shims by the path k3s runs them from, each with its process tree; the VIP a killed kube-vip left.
    expect(kill.command).toContain(String.raw`awk '/\/var\/lib\/rancher\/k3s\/data\/[^\/]*\/bin\/containerd-shim/ { print $1 }'`);
    expect(kill.command).toContain('/run/k3s|/var/lib/kubelet/pods|/var/lib/kubelet/plugins|/run/netns/cni-');
    expect(kill.command).toContain(`ip addr del ${inv.inventory.controlPlane.vip}/32 dev {}`);
    expect(wipe.description).toBe('wipe the old state: /var/lib/rancher/k3s, /run/k3s (the images tarball is uploaded again by the install)');
    expect(wipe.command).toBe('rm -rf /var/lib/rancher/k3s /etc/rancher/node /var/lib/kubelet /run/k3s /var/lib/cni');
    expect(wipeOldState.plan({ host: joiner, probe: probe('', 'inactive\n'), local: undefined, ctx: ctxWith('k3s-prod-2', facts) }).changes).toEqual([]);
    // A host with nothing on disk but containers still running (its disk wiped under them) is cleaned too.
    expect(wipeOldState.plan({ host: joiner, probe: probe('', 'inactive\n', '1'), local: undefined, ctx: ctxWith('k3s-prod-2', facts) }).changes).toHaveLength(
      2,
    );
  });
});

describe('the quorum check against the servers (fake connections)', () => {
  const replaced = serverRefs(inv)[1];
  /** Answers per host: `ready` says what /readyz answers on the n-th read. */
  const fakeCtx = (answers: Record<string, 'unreachable' | string[]>) => {
    const reads: Record<string, number> = {};
    let t = 0;
    const sleeps: number[] = [];
    const ctx = {
      inventory: inv,
      topology: topologyOf(inv),
      facts: new Facts(),
      // A state folder without a kubeconfig: the reads go through `k3s kubectl` on each server.
      stateDir: mkdtempSync(join(tmpdir(), 'replace-state-')),
      signal: new AbortController().signal,
      clock: { now: () => t, sleep: async (ms: number) => void (sleeps.push(ms), (t += ms)) },
      remote: (h: { name: string }) => {
        const a = answers[h.name];
        if (a === 'unreachable') throw new CauseError('SSH_UNREACHABLE', { host: h.name });
        return {
          exec: async (cmd: string) => {
            if (cmd.includes('/readyz')) {
              const n = (reads[h.name] = (reads[h.name] ?? 0) + 1);
              const ready = a[Math.min(n, a.length) - 1];
              return ready === 'ok' ? { code: 0, stdout: 'ok', stderr: '' } : { code: 1, stdout: '', stderr: ready };
            }
            if (cmd.includes('get node')) return { code: 0, stdout: `node/${replaced.name}`, stderr: '' };
            return { code: 0, stdout: JSON.stringify({ members: three.map((m) => ({ ...m, ID: 1 })) }), stderr: '' };
          },
        };
      },
    } as unknown as RunContext;
    return { ctx, sleeps };
  };

  it('reads again while etcd settles (a leader election after a server died), then goes on', async () => {
    const { ctx, sleeps } = fakeCtx({ 'k3s-prod-1': ['etcd failed', 'ok'], 'k3s-prod-3': ['ok'] });
    const found = await checkQuorum(ctx, replaced);
    expect(sleeps).toEqual([3_000]);
    expect(found).toMatchObject([{ key: replaceFacts.key, value: { via: 'k3s-prod-1', nodePresent: true, memberCount: 3 } }]);
  });

  it('stops at once when too few servers are even reachable: waiting cannot bring them back', async () => {
    const { ctx, sleeps } = fakeCtx({ 'k3s-prod-1': 'unreachable', 'k3s-prod-3': 'unreachable' });
    await expect(checkQuorum(ctx, replaced)).rejects.toMatchObject({ causeId: 'QUORUM_AT_RISK' });
    expect(sleeps).toEqual([]);
  });

  it('stops within its budget when the reachable servers never become ready', async () => {
    const { ctx, sleeps } = fakeCtx({ 'k3s-prod-1': ['etcd failed'], 'k3s-prod-3': ['etcd failed'] });
    await expect(checkQuorum(ctx, replaced)).rejects.toMatchObject({ causeId: 'QUORUM_AT_RISK' });
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(QUORUM_SETTLE_MS);
  });
});
