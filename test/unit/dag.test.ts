import { describe, expect, it } from 'vitest';
import { DagInvalid, orderPhases, selectPhases } from '../../src/engine/dag.ts';
import { validatedOrder, allPhases, recoveryPhases } from '../../phases/index.ts';
import type { Phase } from '../../src/engine/phase.ts';
import { UsageError } from '../../src/errors.ts';

const p = (id: string, needs: string[] = []): Phase => ({ id, title: id, needs, hosts: () => [], concurrency: 1, steps: [] });

describe('the phase DAG', () => {
  it('orders the cold build as the operator expects', () => {
    expect(validatedOrder(allPhases()).map((x) => x.id)).toEqual([
      'node-baseline',
      'rolling-servers',
      'rolling-agents',
      'k3s-founder',
      'k3s-join',
      'kube-vip',
      'agents',
      'cilium',
      'verify',
      'flux',
    ]);
  });

  it('orders by needs, not by list position', () => {
    expect(orderPhases([p('c', ['b']), p('b', ['a']), p('a')]).map((x) => x.id)).toEqual(['a', 'b', 'c']);
  });

  it('rejects an unknown need, a duplicate id and a cycle, naming each', () => {
    expect(() => orderPhases([p('a', ['nope'])])).toThrow(/a needs unknown phase nope/);
    expect(() => orderPhases([p('a'), p('a')])).toThrow(/duplicate phase id a/);
    expect(() => orderPhases([p('a', ['b']), p('b', ['a'])])).toThrow(DagInvalid);
    expect(() => orderPhases([p('a', ['b']), p('b', ['a'])])).toThrow(/cycle/);
  });

  it('is rejected when the kube-vip → cilium edge is removed (the 2026-09-01 deadlock cannot be built)', () => {
    const phases = allPhases().map((x) => (x.id === 'cilium' ? { ...x, needs: x.needs.filter((n) => n !== 'kube-vip' && n !== 'agents') } : x));
    expect(() => validatedOrder(phases)).toThrow(/cilium must depend on kube-vip/);
  });

  it('is rejected when the install phases no longer come after the rolling change (they would restart a running server undrained)', () => {
    const phases = allPhases().map((x) => (x.id === 'k3s-founder' ? { ...x, needs: ['node-baseline'] } : x));
    expect(() => validatedOrder(phases)).toThrow(/k3s-founder must depend on rolling-agents/);
  });

  it('leaves the rolling change out of a recovery, its needs too', () => {
    expect(validatedOrder(recoveryPhases()).map((x) => x.id)).toEqual([
      'node-baseline',
      'k3s-founder',
      'k3s-join',
      'kube-vip',
      'agents',
      'cilium',
      'verify',
      'flux',
    ]);
  });

  it('is rejected when joins no longer need the founder', () => {
    const phases = allPhases().map((x) => (x.id === 'k3s-join' ? { ...x, needs: ['node-baseline'] } : x));
    expect(() => validatedOrder(phases)).toThrow(/k3s-join must depend on k3s-founder/);
  });
});

describe('--from, --only, --until', () => {
  const ordered = validatedOrder(allPhases());
  const ids = (sel: Parameters<typeof selectPhases>[1]) => selectPhases(ordered, sel).map((x) => x.id);

  it('selects a range or one phase', () => {
    expect(ids({ until: 'k3s-join' })).toEqual(['node-baseline', 'rolling-servers', 'rolling-agents', 'k3s-founder', 'k3s-join']);
    expect(ids({ from: 'cilium' })).toEqual(['cilium', 'verify', 'flux']);
    expect(ids({ from: 'k3s-join', until: 'kube-vip' })).toEqual(['k3s-join', 'kube-vip']);
    expect(ids({ only: 'verify' })).toEqual(['verify']);
    expect(ids({})).toHaveLength(10);
  });

  it('refuses unknown phases and contradictions as usage errors', () => {
    expect(() => ids({ only: 'k3s' })).toThrow(UsageError);
    expect(() => ids({ only: 'k3s' })).toThrow(/no such phase/);
    expect(() => ids({ from: 'flux', until: 'k3s-join' })).toThrow(/comes before/);
    expect(() => ids({ only: 'flux', from: 'verify' })).toThrow(/--only cannot be combined/);
  });
});
