// A host's part of a rolling change as one step (phases/k3s/rolling-step.ts): before a restart on a running
// cluster the plan puts the backup (the run's first restart only), the quorum check and drain; a host that
// does not restart, or a cluster that does not run, gets exactly what the install steps plan.
import { describe, expect, it } from 'vitest';
import { Facts, hostRecord } from '../../src/engine/facts.ts';
import type { ReadContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeResults, Step } from '../../src/engine/phase.ts';
import { binaryChanged } from '../../phases/k3s/facts.ts';
import { rollingBackup, rollingOptions, rollingRestart, rollingView } from '../../phases/k3s/rolling-facts.ts';
import { rollingStep } from '../../phases/k3s/rolling-step.ts';
import { holderLast } from '../../phases/k3s/rolling-preflight.ts';
import { topologyFor } from '../support/engine-fixture.ts';

const servers: HostRef[] = ['s1', 's2', 's3'].map((name, i) => ({ name, address: `10.0.0.${10 + i}`, role: 'server', founder: i === 0 }));
const inventory = {
  derived: { servers: servers.map((s) => ({ name: s.name, address: s.address })), founder: { name: 's1' }, apiEndpoint: { host: '10.0.0.9', port: 6443 } },
} as unknown as ReadContext['inventory'];

/** Install steps reduced to what the composite reads: an upload that sets binaryChanged, and the service's probe. */
const inner = (differs: boolean): Step<any>[] => [
  {
    id: 'binary',
    title: 'binary',
    probe: () => ({ sum: { command: 'sha256sum' } }),
    plan: () => ({
      changes: differs
        ? [{ kind: 'upload', localPath: '/a/k3s', path: '/usr/local/bin/k3s', mode: '0755', sha256: 'b'.repeat(64), currentSha256: 'a'.repeat(64) }]
        : [],
      facts: [binaryChanged(differs)],
    }),
  },
  {
    id: 'service',
    title: 'service',
    probe: () => ({ active: { command: 'systemctl is-active k3s' }, datastore: { command: 'test -d' } }),
    plan: ({ host, ctx }) => ({
      changes: ctx.facts.get(host.name, binaryChanged)
        ? [{ kind: 'command', description: 'restart k3s: its binary changed', command: 'systemctl restart --no-block k3s.service', sudo: true }]
        : [],
    }),
  },
];

const answer = (stdout: string) => ({ stdout, stderr: '', code: 0 });
const probe = (active = 'active'): ProbeResults => ({ '0.sum': answer('a'), '1.active': answer(active), '1.datastore': answer('present') });

function ctxWith(facts: Facts): ReadContext {
  return {
    env: 'prod',
    check: true,
    inventory,
    clock: { now: () => 0, sleep: async () => undefined },
    signal: new AbortController().signal,
    stateDir: '/state',
    facts,
    topology: topologyFor(servers),
  };
}

function plan(host: HostRef, facts: Facts, opts: { differs?: boolean; active?: string } = {}) {
  const step = rollingStep(inner(opts.differs ?? true));
  return step.plan({ host, probe: probe(opts.active), local: [undefined, undefined], ctx: ctxWith(facts) });
}

const running = (holder = 's2') => rollingView({ running: true, members: ['s1', 's2', 's3'], holder });
const summaries = (p: ReturnType<typeof plan>) => p.changes.map((c) => (c.kind === 'command' || c.kind === 'action' ? c.description : `${c.kind} ${c.path}`));

describe('a rolling change, one host', () => {
  it('puts the backup, the quorum check and drain before the upload and the restart on the first host that restarts', () => {
    const facts = new Facts();
    facts.setRun([running(), rollingOptions({ backup: true, backupId: '20261205T031800Z' })]);
    const p = plan(servers[0], facts);
    expect(summaries(p)).toEqual([
      "before s1's k3s restarts: the others hold quorum (every etcd member started and a voter, every server's API ready; reads only)",
      'back up the cluster before the rolling change (backup 20261205T031800Z; --no-backup skips it)',
      "before s1's k3s restarts: the node cordoned and drained (PodDisruptionBudgets honoured)",
      'upload /usr/local/bin/k3s',
      'restart k3s: its binary changed',
    ]);
    expect(hostRecord(p.facts!)).toMatchObject({ rollingRestart: true, rollingBackup: '20261205T031800Z' });
  });

  it('says and keeps the drain budget the inventory sets (k3s.drainSeconds), 180 s without it', () => {
    const facts = new Facts();
    facts.setRun([running(), rollingOptions({ backup: false, backupId: '20261205T031800Z' })]);
    const drainOf = (ctx: ReadContext) => {
      const p = rollingStep(inner(true)).plan({ host: servers[0], probe: probe(), local: [undefined, undefined], ctx });
      return p.changes.find((c) => c.kind === 'action' && c.description.includes('drained')) as Extract<(typeof p.changes)[number], { kind: 'action' }>;
    };
    const byDefault = drainOf(ctxWith(facts));
    const set = drainOf({ ...ctxWith(facts), inventory: { ...inventory, inventory: { k3s: { drainSeconds: 45 } } } as unknown as ReadContext['inventory'] });
    expect(byDefault.runs.join('\n')).toContain('at most 180 s until they are gone');
    expect(set.runs.join('\n')).toContain('at most 45 s until they are gone');
    expect(byDefault.budgetMs! - set.budgetMs!).toBe(135_000);
  });

  it('takes no second backup, and hands the VIP over on its holder', () => {
    const facts = new Facts();
    facts.setRun([running('s2'), rollingOptions({ backup: true, backupId: 'b1' })]);
    facts.setHost('s1', [rollingRestart(true), rollingBackup('b1')]);
    expect(summaries(plan(servers[1], facts)).slice(0, 2)).toEqual([
      "before s2's k3s restarts: the others hold quorum (every etcd member started and a voter, every server's API ready; reads only)",
      "before s2's k3s restarts: the VIP handed over, the node cordoned and drained (PodDisruptionBudgets honoured)",
    ]);
  });

  it('takes no backup with --no-backup', () => {
    const facts = new Facts();
    facts.setRun([running(), rollingOptions({ backup: false, backupId: 'b1' })]);
    const planned = summaries(plan(servers[0], facts));
    expect(planned).toHaveLength(4);
    expect(planned.some((d) => d.includes('back up'))).toBe(false);
  });

  it('plans nothing around a host whose k3s does not restart, nor on a cluster that does not run', () => {
    const facts = new Facts();
    facts.setRun([running(), rollingOptions({ backup: true, backupId: 'b1' })]);
    expect(plan(servers[0], facts, { differs: false }).changes).toEqual([]);
    const cold = new Facts();
    cold.setRun([rollingView({ running: false, members: [] }), rollingOptions({ backup: true, backupId: 'b1' })]);
    expect(plan(servers[0], cold).changes).toEqual([]);
    // A member whose k3s is down is left to the install phases (and the preflight's quorum refusal).
    expect(plan(servers[0], facts, { active: 'inactive' }).changes).toEqual([]);
  });

  it('orders the VIP holder last, and runs on no host when no cluster runs', () => {
    const facts = new Facts();
    facts.setRun([running('s1')]);
    expect(holderLast(servers, ctxWith(facts)).map((h) => h.name)).toEqual(['s2', 's3', 's1']);
    const cold = new Facts();
    cold.setRun([rollingView({ running: false, members: [] })]);
    expect(holderLast(servers, ctxWith(cold))).toEqual([]);
  });
});
