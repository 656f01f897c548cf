// bootstrap <env> --reset [--node NAME] [--yes]: the command line, the order hosts go in, what each host's
// plan removes (from its probe, pure), the member removal's quorum verdict, the operator's confirmation
// and the state folder's token moved aside. The lab proves it on real hosts: test/lab/reset.test.ts.
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import { confirmReset } from '../../cli/reset-command.ts';
import type { Io } from '../../cli/io.ts';
import { resetRun } from '../../modes/reset.ts';
import { CauseError, UsageError } from '../../src/errors.ts';
import { fromText } from '../../src/inventory/load.ts';
import { topologyOf } from '../../src/inventory/hosts.ts';
import type { ActionChange, CommandChange } from '../../src/engine/changes.ts';
import type { ActionContext } from '../../src/engine/changes.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { systemClock } from '../../src/engine/clock.ts';
import { Facts } from '../../src/engine/facts.ts';
import { hostStep, resetOrder, resetPhase } from '../../phases/k3s/reset-phase.ts';
import { readLeftovers, removals } from '../../phases/k3s/reset-leftovers.ts';
import { memberStep, removalAllowed, staying } from '../../phases/k3s/reset-member.ts';
import { asidePath, moveStateAside } from '../../phases/k3s/reset-state.ts';

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
    '  - { name: worker-2, address: 192.168.2.41 }',
  ].join('\n'),
  '/x/inventory/prod.yaml',
  '/home/ops',
);
const topology = topologyOf(inv);
const host = (name: string) => [...topology.servers, ...topology.agents].find((h) => h.name === name)!;
const ok = (stdout = '') => ({ stdout, stderr: '', code: 0 });

describe('--reset on the command line', () => {
  const run = (...a: string[]) => parseCommand(['prod', ...a]);
  it('parses --reset, --node and --yes', () => {
    expect(run('--reset')).toMatchObject({ kind: 'run', reset: true, yes: false });
    expect(run('--reset', '--node', 'worker-1', '--yes', '--check')).toMatchObject({ reset: true, node: 'worker-1', yes: true, check: true });
  });
  it('refuses --node and --yes without --reset, and --reset with another kind of run or a phase selection', () => {
    expect(() => run('--node', 'worker-1')).toThrow(/--node belongs to --reset/);
    expect(() => run('--yes')).toThrow(/--yes belongs to --reset/);
    for (const other of [
      ['--replace', 'k3s-prod-2'],
      ['--restore', 'b1'],
      ['--from', 'cilium'],
      ['--only', 'verify'],
      ['--until', 'k3s-join'],
    ])
      expect(() => run('--reset', ...other), other[0]).toThrow(new UsageError(`--reset takes the cluster down: it cannot be combined with ${other[0]}`));
    expect(() => parseCommand(['verify', 'prod', '--reset'])).toThrow(/--reset belongs to bootstrap <env> --reset, not to verify/);
  });
  it('refuses a --node that is no host of the inventory', () => {
    expect(() => resetRun(inv, { node: 'k3s-prod-9', check: false })).toThrow(UsageError);
  });
});

describe('the order hosts are reset in', () => {
  it('agents first, then the servers that joined, the founder last; --node only that host', () => {
    expect(resetOrder(topology).map((h) => h.name)).toEqual(['worker-1', 'worker-2', 'k3s-prod-2', 'k3s-prod-3', 'k3s-prod-1']);
    expect(resetOrder(topology, 'k3s-prod-2').map((h) => h.name)).toEqual(['k3s-prod-2']);
    const phase = resetPhase(topology);
    expect(phase.concurrency).toBe('serial');
    expect(phase.hosts({ inventory: inv, topology }).map((h) => h.name)).toEqual(['worker-1', 'worker-2', 'k3s-prod-2', 'k3s-prod-3', 'k3s-prod-1']);
    expect(phase.steps.map((s) => s.id)).toEqual(['reset-member', 'reset-host', 'reset-state']);
    expect(resetPhase(topology, 'worker-1').steps.map((s) => s.id)).toEqual(['reset-member', 'reset-host']);
  });
  it('a server being reset leaves through the servers reset after it (whole cluster) or every other (--node)', () => {
    const order = resetOrder(topology);
    expect(staying(host('k3s-prod-2'), order, undefined, topology.servers).map((h) => h.name)).toEqual(['k3s-prod-3', 'k3s-prod-1']);
    expect(staying(host('k3s-prod-1'), order, undefined, topology.servers)).toEqual([]);
    expect(staying(host('k3s-prod-1'), [host('k3s-prod-1')], 'k3s-prod-1', topology.servers).map((h) => h.name)).toEqual(['k3s-prod-2', 'k3s-prod-3']);
  });
  it('a --node server is checked for quorum before the run; an agent or a whole-cluster reset is not', () => {
    expect(resetRun(inv, { node: 'k3s-prod-2', check: true }).precheck).toBeTypeOf('function');
    expect(resetRun(inv, { node: 'worker-1', check: true }).precheck).toBeUndefined();
    expect(resetRun(inv, { check: true }).precheck).toBeUndefined();
  });
});

describe("a host's removals (from its probe, pure)", () => {
  const vip = '192.168.2.9';
  const everything: ProbeResults = {
    units: ok('k3s.service active enabled\nk3s-agent.service inactive '),
    shims: ok('2\n'),
    mounts: ok('/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs\n'),
    netns: ok('cni-1234\n'),
    vip: ok('eth0\n'),
    links: ok('cilium_net\ncilium_host\ncilium_vxlan\nlxc0a1b2c3d4e5f\n'),
    tc: ok('eth0 ingress 1\neth0 egress 1\n'),
    bpf: ok('/sys/fs/bpf/cilium\n/sys/fs/bpf/tc/globals/cilium_ct4_global\n/sys/fs/bpf/tc/globals/cilium_lxc\n'),
    iptables: ok('xtables /usr/sbin/iptables-legacy-save 0\nxtables /var/lib/rancher/k3s/data/current/bin/aux/iptables-nft-save 12\nnft /usr/sbin/nft\n'),
    cni: ok('/etc/cni/net.d/05-cilium.conflist\n/opt/cni/bin/cilium-cni\n'),
    ciliumDirs: ok('/var/run/cilium\n'),
    files: ok('/var/lib/rancher/k3s\n/etc/rancher/k3s\n/etc/systemd/system/k3s.service\n/etc/systemd/system/k3s.service.env\n/usr/local/bin/k3s\n'),
    k3sLinks: ok(''),
    ownState: ok('/var/lib/bootstrap\n'),
  };

  it("lists everything the probe saw, in the order it must go: k3s stopped first, iptables before k3s's files, this tool's sums of them last", () => {
    const r = removals(readLeftovers(everything), { vip, unit: 'k3s.service' });
    expect(r.map((x) => x.what.split(' ').slice(0, 3).join(' '))).toEqual([
      'stop k3s.service and',
      'remove the control-plane',
      "remove Cilium's tc",
      "remove Cilium's links",
      "remove Cilium's BPF",
      "remove Cilium's iptables",
      "remove Cilium's CNI",
      "remove Cilium's runtime",
      "remove k3s's files:",
      "remove bootstrap's own",
    ]);
    expect(r[0].what).toBe(
      'stop k3s.service and everything it started as k3s-killall.sh does (2 container shims and their processes, 1 mount, 1 CNI namespace)',
    );
    expect(r[1]).toEqual({ what: 'remove the control-plane VIP 192.168.2.9 from eth0', command: 'ip addr del 192.168.2.9/32 dev eth0 2>/dev/null; true' });
    expect(r[2].command).toBe('tc filter del dev eth0 ingress pref 1 2>/dev/null; tc filter del dev eth0 egress pref 1 2>/dev/null; true');
    expect(r[3].what).toBe("remove Cilium's links cilium_net, cilium_host, cilium_vxlan, lxc0a1b2c3d4e5f");
    expect(r[4]).toEqual({
      what: "remove Cilium's BPF pins: /sys/fs/bpf/cilium, 2 maps /sys/fs/bpf/tc/globals/cilium_*",
      command: 'rm -rf /sys/fs/bpf/cilium /sys/fs/bpf/tc/globals/cilium_*',
    });
    // Only the iptables with rules of Cilium's; k3s's bundled one, by its path, before its folder goes.
    expect(r[5].command).toBe(
      '/var/lib/rancher/k3s/data/current/bin/aux/iptables-nft-save | grep -iv cilium | /var/lib/rancher/k3s/data/current/bin/aux/iptables-nft-restore',
    );
    expect(r[6].command).toContain('rm -f /etc/cni/net.d/*cilium* /opt/cni/bin/cilium-cni');
    expect(r[8].what).toBe(
      "remove k3s's files: /var/lib/rancher/k3s, /etc/rancher/k3s, /etc/systemd/system/k3s.service, /etc/systemd/system/k3s.service.env, /usr/local/bin/k3s; k3s.service disabled",
    );
    expect(r[8].command).toMatch(
      /^systemctl disable k3s\.service 2>\/dev\/null; rm -rf \/var\/lib\/rancher\/k3s \/etc\/rancher\/node \/var\/lib\/kubelet \/run\/k3s \/var\/lib\/cni \/etc\/rancher\/k3s /,
    );
    expect(r[8].command).toContain('systemctl daemon-reload');
    expect(r[9]).toEqual({
      what: "remove bootstrap's own state on the host: /var/lib/bootstrap (the sums of the files it uploaded)",
      command: 'rm -rf /var/lib/bootstrap',
    });
  });

  it('nothing left: nothing to do (a second reset changes nothing)', () => {
    const none = readLeftovers({ units: ok('k3s.service inactive \nk3s-agent.service inactive '), shims: ok('0\n'), iptables: ok('nft /usr/sbin/nft\n') });
    expect(removals(none, { vip, unit: 'k3s.service' })).toEqual([]);
  });

  it("without iptables, Cilium's chains go through nft: the jumps by handle, then the chains", () => {
    const left = readLeftovers({
      iptables: ok('nft /usr/sbin/nft\nnftchain ip filter CILIUM_INPUT\nnftchain ip filter CILIUM_FORWARD\nnftrule ip filter INPUT 7\n'),
    });
    expect(removals(left, { vip, unit: 'k3s.service' })).toEqual([
      {
        what: "remove Cilium's iptables rules through nft (no iptables on the host): 2 chains CILIUM_INPUT, CILIUM_FORWARD, 1 jump to them",
        command:
          '/usr/sbin/nft delete rule ip filter INPUT handle 7 && /usr/sbin/nft flush chain ip filter CILIUM_INPUT && /usr/sbin/nft flush chain ip filter CILIUM_FORWARD && /usr/sbin/nft delete chain ip filter CILIUM_INPUT && /usr/sbin/nft delete chain ip filter CILIUM_FORWARD',
      },
    ]);
  });

  it('says there is nothing to clean when the host has neither iptables nor nft', () => {
    const probe = { ...everything, iptables: ok('') };
    const plan = hostStep.plan({ host: host('k3s-prod-1'), probe, local: undefined, ctx: { inventory: inv } as unknown as RunContext });
    const first = plan.changes[0] as CommandChange;
    expect(first.description).toContain("no iptables (neither the host's nor k3s's bundled one) and no nft on the host: no iptables rules to clean");
    expect(plan.changes.every((c) => c.kind === 'command' && c.sudo)).toBe(true);
    expect(plan.changes.map((c) => (c as CommandChange).description).join('\n')).not.toContain('iptables rules (its');
  });
});

describe('the member removal', () => {
  it('needs a majority of the members answering without the leaving server (it is stopped first)', () => {
    expect(removalAllowed(3, 3)).toEqual({ ok: true, needed: 2 });
    expect(removalAllowed(2, 2)).toEqual({ ok: true, needed: 2 });
    expect(removalAllowed(2, 1)).toEqual({ ok: false, needed: 2 });
    expect(removalAllowed(3, 1)).toEqual({ ok: false, needed: 2 });
  });

  const step = memberStep(resetOrder(topology), undefined);
  const ctx = { inventory: inv, topology } as unknown as RunContext;
  const running = { k3s: ok('active\ndata\n') };
  it('plans a Node deletion for every server but the last, none for agents or a host without k3s', () => {
    const two = step.plan({ host: host('k3s-prod-2'), probe: running, local: undefined, ctx }).changes as ActionChange[];
    expect(two).toHaveLength(1);
    expect(two[0].description).toContain(
      "stop k3s on k3s-prod-2, delete its Node through a server that stays (k3s-prod-3, k3s-prod-1; never forced: k3s's finalizer removes its etcd member)",
    );
    // Stopped before its Node goes: a running k3s whose member is removed joins again.
    const runs = two[0].runs.join('\n');
    expect(runs.indexOf('sudo systemctl stop k3s.service (on k3s-prod-2')).toBeLessThan(runs.indexOf('delete node k3s-prod-2'));
    expect(two[0].runs.join('\n')).toContain('delete node k3s-prod-2 --ignore-not-found --timeout=90s');
    expect(two[0].budgetMs).toBeGreaterThan(120_000);
    expect(step.plan({ host: host('k3s-prod-1'), probe: running, local: undefined, ctx }).changes).toEqual([]);
    expect(step.plan({ host: host('worker-1'), probe: running, local: undefined, ctx }).changes).toEqual([]);
    expect(step.plan({ host: host('k3s-prod-2'), probe: { k3s: ok('inactive\n') }, local: undefined, ctx }).changes).toEqual([]);
    // A k3s that runs (reloading too) is still a member, even with its data folder gone.
    for (const state of ['active', 'activating', 'reloading'])
      expect(step.plan({ host: host('k3s-prod-2'), probe: { k3s: ok(`${state}\n`) }, local: undefined, ctx }).changes, state).toHaveLength(1);
    // --node: an agent's Node goes too (the cluster stays).
    const agent = memberStep([host('worker-1')], 'worker-1').plan({ host: host('worker-1'), probe: running, local: undefined, ctx }).changes;
    expect(agent).toHaveLength(1);
  });

  /** A run context whose hosts answer /readyz as `ready` says and list `members` members. */
  const runCtx = (ready: Record<string, boolean>, members: number) => {
    const events: EngineEvent[] = [];
    const commands: string[] = [];
    const list = JSON.stringify({ members: Array.from({ length: members }, (_, i) => ({ ID: i + 1, name: `m${i}`, peerURLs: [] })) });
    const c = {
      inventory: inv,
      topology,
      clock: systemClock,
      // A state folder without a kubeconfig: the reads and the delete go through `k3s kubectl` on the server.
      stateDir: mkdtempSync(join(tmpdir(), 'reset-member-')),
      signal: new AbortController().signal,
      facts: new Facts(),
      emit: (e: EngineEvent) => events.push(e),
      remote: (h: HostRef) => ({
        exec: async (cmd: string) => {
          commands.push(`${h.name}: ${cmd}`);
          if (cmd.includes('/readyz')) return ready[h.name] ? ok('ok') : { stdout: '', stderr: 'connection refused', code: 1 };
          if (cmd.includes('/db/info')) return ok(list);
          return ok();
        },
      }),
    };
    return { actx: { ...c, host: host('k3s-prod-3') } as unknown as ActionContext, events, commands };
  };

  it('skips the removal and says so when the servers that answer are no majority (whole cluster)', async () => {
    const { actx, events, commands } = runCtx({ 'k3s-prod-3': true, 'k3s-prod-1': true }, 2);
    const change = step.plan({ host: host('k3s-prod-3'), probe: running, local: undefined, ctx }).changes[0] as ActionChange;
    await change.run(actx);
    expect(commands.filter((c) => c.includes('delete node') || c.includes('systemctl stop'))).toEqual([]);
    expect(events).toEqual([
      {
        type: 'warning',
        host: 'k3s-prod-3',
        message:
          'member removal skipped: 1 of 2 etcd members answer without k3s-prod-3, 2 are needed to remove its member (k3s-prod-1: API ready); k3s-prod-3 is wiped with its member left in the cluster, which is being taken down',
      },
    ]);
  });

  it('refuses with QUORUM_AT_RISK instead for --node, before anything changed', async () => {
    const { actx, commands } = runCtx({ 'k3s-prod-3': false, 'k3s-prod-1': true, 'k3s-prod-2': false }, 3);
    const change = memberStep([host('k3s-prod-3')], 'k3s-prod-3').plan({ host: host('k3s-prod-3'), probe: running, local: undefined, ctx })
      .changes[0] as ActionChange;
    const err = await change.run(actx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect((err as CauseError).causeId).toBe('QUORUM_AT_RISK');
    expect(commands.filter((c) => c.includes('delete node'))).toEqual([]);
  });
});

describe("the operator's confirmation", () => {
  const io = (answer?: string | undefined, tty = true) => {
    const err: string[] = [];
    const asked: string[] = [];
    const value: Io = {
      out: () => undefined,
      err: (l) => err.push(l),
      isTTY: tty,
      env: {},
      ...(tty && {
        ask: async (q: string) => {
          asked.push(q);
          return answer;
        },
      }),
    };
    return { io: value, err, asked };
  };

  it("goes on when the environment's name is typed, saying first what goes", async () => {
    const t = io(' prod ');
    await confirmReset(inv, undefined, t.io);
    expect(t.asked).toEqual(["Type the environment's name (prod) to go on: "]);
    expect(t.err.join('\n')).toContain('worker-1, worker-2, k3s-prod-2, k3s-prod-3, k3s-prod-1 (in that order), for good');
  });

  it('stops with RESET_NOT_CONFIRMED on another answer or an interrupted prompt', async () => {
    for (const answer of ['prd', undefined]) {
      const err = await confirmReset(inv, 'worker-1', io(answer).io).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CauseError);
      expect((err as CauseError).causeId).toBe('RESET_NOT_CONFIRMED');
      expect((err as CauseError).evidence.seen).toContain("the environment's name");
    }
  });

  it('without a terminal to ask on, refuses as a usage error naming --yes', async () => {
    const err = await confirmReset(inv, undefined, io(undefined, false).io).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toContain('pass --yes');
  });
});

describe("the state folder's token and kubeconfig, after the last host", () => {
  it('are moved aside with the time of the reset (never deleted, 0600 kept); backups stay; nothing on another host', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'reset-state-'));
    writeFileSync(join(stateDir, 'cluster-token.json'), '{"secret":"s"}', { mode: 0o600 });
    writeFileSync(join(stateDir, 'kubeconfig'), 'apiVersion: v1\n', { mode: 0o600 });
    const now = Date.parse('2026-12-05T11:02:03.456Z');
    const ctx = { stateDir, clock: { now: () => now } } as unknown as RunContext;
    const step = moveStateAside('k3s-prod-1');
    const local = await step.local!(host('k3s-prod-1'), ctx);
    expect(step.plan({ host: host('k3s-prod-2'), probe: {}, local, ctx }).changes).toEqual([]);
    const [change] = step.plan({ host: host('k3s-prod-1'), probe: {}, local, ctx }).changes as ActionChange[];
    const token = join(stateDir, 'cluster-token.json');
    expect(asidePath(token, now)).toBe(`${token}.reset-2026-12-05T11-02-03Z`);
    expect(change.description).toContain(`${token} → ${token}.reset-2026-12-05T11-02-03Z`);
    expect(change.writes).toEqual([`${token}.reset-2026-12-05T11-02-03Z`, `${join(stateDir, 'kubeconfig')}.reset-2026-12-05T11-02-03Z`]);
    await change.run({} as ActionContext);
    expect(readdirSync(stateDir).sort()).toEqual(['cluster-token.json.reset-2026-12-05T11-02-03Z', 'kubeconfig.reset-2026-12-05T11-02-03Z']);
    expect(statSync(`${token}.reset-2026-12-05T11-02-03Z`).mode & 0o777).toBe(0o600);
    // Nothing left to move: nothing planned (a second reset).
    expect(step.plan({ host: host('k3s-prod-1'), probe: {}, local: await step.local!(host('k3s-prod-1'), ctx), ctx }).changes).toEqual([]);
  });
});
