// `bootstrap <env> --remove NAME[,NAME…]`: the order the nodes go in, the quorum judged at every step, the
// even-count rule, the arguments, the plan each node gets from what the precheck saw, and the wait that names
// what is left of a deleted Node (NODE_NOT_REMOVED, ETCD_MEMBER_NOT_REMOVED).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import { endStateStop, removeRun } from '../../modes/remove.ts';
import { removalOrder, removalQuorum, removeFacts, type RemoveFacts, type ServerAnswer } from '../../phases/k3s/remove-quorum.ts';
import { deleteForRemoval, drainForRemoval, secretForRemoval, wipeForRemoval } from '../../phases/k3s/remove-steps.ts';
import { CauseError, causesOf } from '../../src/errors.ts';
import { Facts } from '../../src/engine/facts.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import type { EngineContext, ReadContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import type { Member } from '../../src/k3s/etcd-members.ts';
import { allHostRefs, topologyOf } from '../../src/inventory/hosts.ts';
import { fromText } from '../../src/inventory/load.ts';

const prodText = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
/** prod with five servers (k3s-prod-1 the founder) and two agents. */
const fiveText = prodText
  .replace(/servers:\n((?:  - .*\n)+)/, (m) => `${m}  - { name: k3s-prod-4, address: 192.168.2.13 }\n  - { name: k3s-prod-5, address: 192.168.2.14 }\n`)
  .replace('agents: []', 'agents:\n  - { name: worker-1, address: 192.168.2.40 }\n  - { name: worker-2, address: 192.168.2.41 }');
const inv = fromText(fiveText, '/x/inventory/prod.yaml', '/home/ops');
const hosts = allHostRefs(inv);
const host = (name: string) => hosts.find((h) => h.name === name)!;
const member = (h: HostRef, i: number): Member => ({ id: `${i}a`, name: `${h.name}-0000000${i}`, peerURLs: [`https://${h.address}:2380`], isLearner: false });
const servers = hosts.filter((h) => h.role === 'server');
const members = servers.map(member);
const answers = (down: string[] = []): ServerAnswer[] =>
  servers.map((s) => ({
    name: s.name,
    address: s.address,
    ready: !down.includes(s.name),
    said: down.includes(s.name) ? 'not reachable (SSH_UNREACHABLE)' : 'ok',
  }));

describe('the removal order', () => {
  it('agents first, then servers in inventory order, the founder last', () => {
    const agent = hosts.find((h) => h.role === 'agent')!;
    expect(removalOrder(hosts, ['k3s-prod-1', 'k3s-prod-3', agent.name]).map((h) => h.name)).toEqual([agent.name, 'k3s-prod-3', 'k3s-prod-1']);
  });
});

describe('quorum, judged at every step before anything changes', () => {
  const order = (...names: string[]) => removalOrder(hosts, names);

  it('passes when every step leaves a majority answering (5 → 3, the founder among them)', () => {
    expect(removalQuorum(order('k3s-prod-1', 'k3s-prod-2'), members, answers())).toBeUndefined();
  });

  it('refuses a step after which the members left would not have a majority answering (two servers down, a third removed)', () => {
    const stop = removalQuorum(order('k3s-prod-3'), members, answers(['k3s-prod-4', 'k3s-prod-5']));
    expect(stop?.causeId).toBe('QUORUM_AT_RISK');
    expect(stop?.message).toMatch(/While k3s-prod-3 is stopped and its member removed \(step 1 of 1\), 2 of the 5 etcd members would answer; 3 are needed/);
    expect(stop?.evidence.seen).toMatch(/k3s-prod-4: not reachable/);
  });

  it('judges the later steps too: the second server of a removal is refused when the first leaves too few', () => {
    const stop = removalQuorum(order('k3s-prod-2', 'k3s-prod-3'), members, answers(['k3s-prod-5']));
    expect(stop?.host).toBe('k3s-prod-3');
    expect(stop?.message).toMatch(/\(step 2 of 2\), 2 of the 4 etcd members would answer; 3 are needed/);
  });

  it('refuses a removal of every server; a server already removed (no member) changes nothing', () => {
    expect(removalQuorum(order(...servers.map((s) => s.name)), members, answers())?.causeId).toBe('QUORUM_AT_RISK');
    // Two servers: the one that stays cannot remove the other alone (1 of 2 members answering is no majority).
    expect(removalQuorum(order('k3s-prod-2'), members.slice(0, 2), answers())?.message).toMatch(/1 of the 2 etcd members would answer; 2 are needed/);
    expect(
      removalQuorum(
        order('k3s-prod-2'),
        members.filter((m) => !m.name.startsWith('k3s-prod-2')),
        answers(['k3s-prod-2']),
      ),
    ).toBeUndefined();
  });
});

describe('the end state', () => {
  const three = fromText(prodText, '/x/inventory/prod.yaml', '/home/ops');
  it('an even number of servers left is SERVER_COUNT_EVEN unless --allow-even; --allow-even in its remedy', () => {
    const stop = endStateStop(inv, ['k3s-prod-2'], false);
    expect(stop?.causeId).toBe('SERVER_COUNT_EVEN');
    expect(stop?.message).toMatch(/^4 servers would stay/);
    expect(stop?.remedy).toMatch(/--allow-even/);
    expect(endStateStop(inv, ['k3s-prod-2'], true)).toBeUndefined();
    expect(endStateStop(inv, ['k3s-prod-2', 'k3s-prod-3'], false)).toBeUndefined();
  });

  it('every server named is QUORUM_AT_RISK, before any host is dialled', () => {
    const err = (() => {
      try {
        removeRun(three, ['k3s-prod-1', 'k3s-prod-2', 'k3s-prod-3'], { check: true, allowEven: true });
      } catch (e) {
        return e;
      }
    })();
    expect(causesOf(err).map((c) => c.causeId)).toEqual(['QUORUM_AT_RISK']);
  });

  it('an inventory with an even count passes the contract with --allow-even (or in a --remove run) only', () => {
    const four = fiveText.replace(/  - \{ name: k3s-prod-5.*\n/, '');
    expect(() => fromText(four, '/x/inventory/prod.yaml', '/home/ops')).toThrow(/contract/);
    expect(fromText(four, '/x/inventory/prod.yaml', '/home/ops', { allowEven: true }).derived.servers).toHaveLength(4);
  });

  it('refuses a name that is no node of the inventory', () => {
    expect(() => removeRun(inv, ['k3s-prod-9'], { check: true, allowEven: false })).toThrow(/--remove k3s-prod-9: not a node of the inventory/);
  });

  it('runs the removal phase alone on the named nodes, in order; their hosts need not answer SSH', () => {
    const plan = removeRun(inv, ['k3s-prod-1', 'k3s-prod-2', 'worker-1'], { check: true, allowEven: false });
    expect(plan.phases.map((p) => p.id)).toEqual(['k3s-remove']);
    expect(plan.phases[0].hostsMayBeDown).toBe(true);
    expect(plan.phases[0].hosts({ inventory: inv, topology: plan.topology }).map((h) => h.name)).toEqual(['worker-1', 'k3s-prod-2', 'k3s-prod-1']);
    expect(plan.precheck).toBeDefined();
  });
});

describe('the arguments', () => {
  it('--remove NAME[,NAME…] and --allow-even', () => {
    expect(parseCommand(['prod', '--remove', 'a,b', '--allow-even', '--check'])).toMatchObject({
      kind: 'run',
      remove: ['a', 'b'],
      allowEven: true,
      check: true,
    });
    expect(parseCommand(['prod', '--allow-even'])).toMatchObject({ kind: 'run', allowEven: true });
  });

  it.each([
    [['prod', '--remove', 'a', '--replace', 'b'], /--remove cannot be combined with --replace/],
    [['prod', '--remove', 'a', '--restore', 'b'], /--remove cannot be combined with --restore/],
    [['prod', '--remove', 'a', '--from', 'verify'], /--remove cannot be combined with --from/],
    [['prod', '--remove', 'a', '--only', 'verify'], /--remove cannot be combined with --only/],
    [['prod', '--remove', 'a,,b'], /give node names separated by commas/],
    [['prod', '--remove', 'a,a'], /a is named twice/],
    [['validate', 'prod', '--remove', 'a'], /--remove belongs to a run/],
    [['plan', 'prod', '--allow-even'], /--allow-even belongs to a run/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(message);
  });
});

/** A read context whose precheck found `facts`. */
function readCtx(facts: Partial<RemoveFacts>): ReadContext {
  const f = new Facts();
  f.setRun([removeFacts({ via: 'k3s-prod-3', nodes: [], secrets: [], members, hosts: {}, ...facts })]);
  return { inventory: inv, topology: { ...topologyOf(inv), removing: [] }, facts: f } as unknown as ReadContext;
}
const planOf = (step: typeof drainForRemoval, h: HostRef, facts: Partial<RemoveFacts>) =>
  step.plan({ host: h, probe: {}, local: undefined, ctx: readCtx(facts) });

describe('what each node is planned from what the precheck saw', () => {
  it('the VIP holder hands the lease over before its drain; every API call goes through the survivor', () => {
    const p = planOf(drainForRemoval, host('k3s-prod-1'), { nodes: ['k3s-prod-1'], holder: 'k3s-prod-1' });
    const a = p.changes[0] as ActionChange;
    expect(a.on).toBe('k3s-prod-3');
    expect(a.description).toMatch(/^hand the VIP over to k3s-prod-3, then cordon and drain k3s-prod-1/);
    expect(a.runs.join('\n')).toMatch(/patch lease -n kube-system plndr-cp-lock/);
    expect(a.runs.join('\n')).toMatch(/pods\/<pod>\/eviction/);
    expect(planOf(drainForRemoval, host('k3s-prod-2'), { nodes: ['k3s-prod-2'], holder: 'k3s-prod-1' }).changes[0]).toMatchObject({
      description: expect.stringMatching(/^cordon and drain k3s-prod-2/),
    });
  });

  it('the Node is deleted through the survivor, never forced, then the member and the node-password Secret are waited for', () => {
    const a = planOf(deleteForRemoval, host('k3s-prod-2'), { nodes: ['k3s-prod-2'], secrets: ['k3s-prod-2'] }).changes[0] as ActionChange;
    expect(a.on).toBe('k3s-prod-3');
    expect(a.runs[0]).toBe(
      "DELETE /api/v1/nodes/k3s-prod-2   (Kubernetes API through the SSH connection to k3s-prod-3; without the state folder's kubeconfig: sudo k3s kubectl delete node k3s-prod-2 --ignore-not-found --timeout=90s there)",
    );
    expect(a.runs.join('\n')).not.toMatch(/--force|--grace-period=0/);
    expect(a.runs[1]).toMatch(/GET \/api\/v1\/nodes\/k3s-prod-2 .*get node k3s-prod-2 .*GET \/db\/info/);
    const secret = planOf(secretForRemoval, host('k3s-prod-2'), { nodes: ['k3s-prod-2'], secrets: ['k3s-prod-2'] }).changes[0] as ActionChange;
    expect(secret.on).toBe('k3s-prod-3');
    expect(secret.runs.join('\n')).toMatch(
      /get secret -n kube-system k3s-prod-2\.node-password\.k3s.*\n.*delete secret -n kube-system k3s-prod-2\.node-password\.k3s/,
    );
  });

  it('a node already gone plans nothing; a member left without its Node is ETCD_MEMBER_NOT_REMOVED', () => {
    const gone = { members: members.filter((m) => !m.name.startsWith('k3s-prod-2')) };
    expect(planOf(drainForRemoval, host('k3s-prod-2'), gone).changes).toEqual([]);
    expect(planOf(deleteForRemoval, host('k3s-prod-2'), gone).changes).toEqual([]);
    expect(planOf(deleteForRemoval, host('k3s-prod-2'), {}).stops?.[0].causeId).toBe('ETCD_MEMBER_NOT_REMOVED');
  });

  it('the host is stopped and wiped when it answers SSH and holds k3s; a host that does not answer plans nothing', () => {
    const seen = { reachable: true, present: ['/var/lib/rancher/k3s', '/etc/systemd/system/k3s-agent.service'], active: 'active', shims: 2 };
    const agent = host('worker-1');
    const p = planOf(wipeForRemoval, agent, { hosts: { [agent.name]: seen } });
    expect(p.changes.map((c) => (c.kind === 'command' ? c.command : ''))).toEqual([
      expect.stringMatching(/^systemctl stop k3s-agent\.service; systemctl kill --signal=KILL k3s-agent\.service/),
      expect.stringMatching(
        /^systemctl disable k3s-agent\.service 2>\/dev\/null; rm -rf \/var\/lib\/rancher\/k3s .*\/etc\/systemd\/system\/k3s-agent\.service \/etc\/systemd\/system\/k3s-agent\.service\.env \/usr\/local\/bin\/k3s;/,
      ),
    ]);
    expect(planOf(wipeForRemoval, agent, { hosts: { [agent.name]: { ...seen, reachable: false } } }).changes).toEqual([]);
    expect(planOf(wipeForRemoval, agent, { hosts: { [agent.name]: { reachable: true, present: [], active: 'inactive', shims: 0 } } }).changes).toEqual([]);
  });
});

describe('the wait for what is left of a deleted Node', () => {
  /** An action context whose survivor answers `answer(command)`, on a clock that only moves when the wait sleeps. */
  function actx(answer: (command: string) => { code: number; stdout: string; stderr: string }) {
    let t = 0;
    const via = host('k3s-prod-3');
    return {
      inventory: inv,
      topology: topologyOf(inv),
      host: via,
      clock: { now: () => t, sleep: async (ms: number) => void (t += ms) },
      // A state folder without a kubeconfig: the reads and deletes go through `k3s kubectl` on the survivor.
      stateDir: mkdtempSync(join(tmpdir(), 'remove-state-')),
      signal: new AbortController().signal,
      emit: () => undefined,
      remote: () => ({ host: via.name, exec: async (command: string) => answer(command), close: async () => undefined }),
    } as unknown as EngineContext & { host: HostRef };
  }
  const notFound = (what: string) => ({ code: 1, stdout: '', stderr: `Error from server (NotFound): ${what} not found` });
  const run = async (h: HostRef, answer: Parameters<typeof actx>[0], step = deleteForRemoval) => {
    const a = planOf(step, h, { nodes: [h.name], secrets: [h.name] }).changes[0] as ActionChange;
    return a.run(actx(answer)).then(
      () => undefined,
      (e: unknown) => e as CauseError,
    );
  };

  it('ends once the Node and (a server) its member are gone', async () => {
    const left = members.filter((m) => !m.name.startsWith('k3s-prod-2'));
    const err = await run(host('k3s-prod-2'), (c) =>
      c.includes('/db/info')
        ? { code: 0, stdout: JSON.stringify({ members: left.map((m) => ({ ID: parseInt(m.id, 16), name: m.name, peerURLs: m.peerURLs })) }), stderr: '' }
        : c.includes('delete')
          ? { code: 0, stdout: 'node "k3s-prod-2" deleted', stderr: '' }
          : notFound('x'),
    );
    expect(err).toBeUndefined();
  });

  it('the node-password Secret: gone with its Node, or deleted as an orphan when it is still there (or back) after the wipe', async () => {
    const seen: string[] = [];
    let deleted = false;
    const err = await run(
      host('worker-1'),
      (c) => {
        seen.push(c);
        if (c.includes('delete secret')) deleted = true;
        return c.includes('get secret') && !deleted ? { code: 0, stdout: 'secret/worker-1.node-password.k3s', stderr: '' } : notFound('x');
      },
      secretForRemoval,
    );
    expect(err).toBeUndefined();
    expect(seen.filter((c) => c.startsWith('k3s kubectl delete'))).toEqual([
      'k3s kubectl delete secret -n kube-system worker-1.node-password.k3s --ignore-not-found --timeout=30s',
    ]);
    const quiet: string[] = [];
    expect(await run(host('worker-1'), (c) => (quiet.push(c), notFound('x')), secretForRemoval)).toBeUndefined();
    expect(quiet.filter((c) => c.includes('delete'))).toEqual([]);
  });

  it('names NODE_NOT_REMOVED with what is left when the Secret stays past the budget', async () => {
    const err = await run(
      host('worker-1'),
      (c) => (c.includes('get secret') ? { code: 0, stdout: 'secret/worker-1.node-password.k3s', stderr: '' } : { code: 0, stdout: '', stderr: '' }),
      secretForRemoval,
    );
    expect(err?.causeId).toBe('NODE_NOT_REMOVED');
    expect(err?.evidence.seen).toBe('Secret kube-system/worker-1.node-password.k3s still there');
  });

  it("names ETCD_MEMBER_NOT_REMOVED when a server's member stays", async () => {
    const err = await run(host('k3s-prod-2'), (c) =>
      c.includes('/db/info')
        ? { code: 0, stdout: JSON.stringify({ members: members.map((m) => ({ ID: parseInt(m.id, 16), name: m.name, peerURLs: m.peerURLs })) }), stderr: '' }
        : notFound('x'),
    );
    expect(err?.causeId).toBe('ETCD_MEMBER_NOT_REMOVED');
    expect(err?.evidence.seen).toMatch(/member 1a k3s-prod-2-00000001 still listed/);
  });
});
