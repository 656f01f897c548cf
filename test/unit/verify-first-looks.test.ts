// verify's checks look at the cluster together: the first check's turn starts every check's first look, and
// each check still reports in its own turn. A first look is taken once, and only when it passed and is fresh;
// otherwise the check looks again itself.
import { describe, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { ProbeMemo } from '../../src/engine/probe-memo.ts';
import { checkGate, startLooks, type Check, type Verdict } from '../../phases/verify/read.ts';

const host = { name: 'k3s-prod-1' } as HostRef;

function context() {
  const c = { t: 0, rows: [] as string[] };
  const ctx = {
    clock: {
      now: () => c.t,
      sleep: async (ms: number) => {
        c.t += ms;
      },
    },
    emit: (e: { check: string; host: string; ok: boolean }) => c.rows.push(`${e.check} ${e.host} ${e.ok ? 'ok' : 'failed'}`),
  } as unknown as RunContext;
  return { c, ctx };
}

const pass = (id: string): Verdict => ({ rows: [{ host: 'k3s-prod-1', ok: true, detail: id }], stops: [] });
const fail = (id: string): Verdict => ({
  rows: [{ host: 'k3s-prod-1', ok: false, detail: id }],
  stops: [new CauseError('NODE_NOT_READY', { host: 'k3s-prod-1', evidence: { seen: id } })],
});

/** A check whose looks answer in turn from `answers` (the last one again once they run out), counting its looks. */
function counted(id: string, answers: Verdict[], onLook: () => void = () => undefined) {
  const seen = { looks: 0 };
  const check: Check = {
    id,
    title: id,
    budgetMs: 60_000,
    look: async () => {
      onLook();
      return answers[Math.min(seen.looks++, answers.length - 1)];
    },
  };
  return { seen, check, gate: checkGate(check) };
}

describe('verify: first looks', () => {
  it("the first check's turn starts every look; each check takes its own and reports in its turn", async () => {
    const { c, ctx } = context();
    const started: string[] = [];
    const a = counted('a', [pass('a')], () => started.push('a'));
    const b = counted('b', [pass('b')], () => started.push('b'));
    startLooks(ctx, host, [a.check, b.check]);
    expect(started).toEqual(['a', 'b']);
    await a.gate.run(host, ctx, new AbortController().signal);
    expect(c.rows).toEqual(['a k3s-prod-1 ok']);
    await b.gate.run(host, ctx, new AbortController().signal);
    expect(c.rows).toEqual(['a k3s-prod-1 ok', 'b k3s-prod-1 ok']);
    // One look each: the first looks were taken, nothing was asked twice.
    expect([a.seen.looks, b.seen.looks]).toEqual([1, 1]);
  });

  it('a first look that found a stop is not taken: the check looks again in its turn (and again until it passes)', async () => {
    const { c, ctx } = context();
    const a = counted('a', [fail('a: not yet'), fail('a: not yet'), pass('a')]);
    startLooks(ctx, host, [a.check]);
    await a.gate.run(host, ctx, new AbortController().signal);
    expect(a.seen.looks).toBe(3);
    expect(c.rows).toEqual(['a k3s-prod-1 ok']);
  });

  it('a first look older than 10 s when its turn comes is not taken', async () => {
    const { c, ctx } = context();
    const a = counted('a', [pass('a: long ago'), fail('a: now')]);
    startLooks(ctx, host, [a.check]);
    await new Promise((r) => setTimeout(r, 0));
    c.t += 10_000;
    await expect(a.gate.run(host, ctx, new AbortController().signal)).rejects.toMatchObject({ causeId: 'NODE_NOT_READY' });
    expect(c.rows).toEqual(['a k3s-prod-1 failed']);
  });

  it('starts once a run: a second start, and a second turn of the same check, look afresh', async () => {
    const { ctx } = context();
    const a = counted('a', [pass('a')]);
    startLooks(ctx, host, [a.check]);
    startLooks(ctx, host, [a.check]);
    expect(a.seen.looks).toBe(1);
    await a.gate.run(host, ctx, new AbortController().signal);
    await a.gate.run(host, ctx, new AbortController().signal);
    expect(a.seen.looks).toBe(2);
  });

  it('a first look that threw is looked at again in its turn, which meets the failure itself', async () => {
    const { ctx } = context();
    let looks = 0;
    const check: Check = {
      id: 'x',
      title: 'x',
      budgetMs: 60_000,
      look: async () => {
        looks++;
        throw new Error('a bug in a check');
      },
    };
    startLooks(ctx, host, [check]);
    await expect(checkGate(check).run(host, ctx, new AbortController().signal)).rejects.toThrow('a bug in a check');
    expect(looks).toBe(2);
  });

  it('looks started with the run are taken while the probe memo has forgotten nothing since: no second look', async () => {
    const { c, ctx } = context();
    (ctx as { probeMemo?: ProbeMemo }).probeMemo = new ProbeMemo();
    const a = counted('a', [pass('a')]);
    startLooks(ctx, host, [a.check]);
    // The first check's turn starts them again only if something changed since.
    startLooks(ctx, host, [a.check]);
    await a.gate.run(host, ctx, new AbortController().signal);
    expect(a.seen.looks).toBe(1);
    expect(c.rows).toEqual(['a k3s-prod-1 ok']);
  });

  it('a change after the looks began (an apply, a write, a wait: the memo forgets) makes the checks look afresh', async () => {
    const { c, ctx } = context();
    const memo = new ProbeMemo();
    (ctx as { probeMemo?: ProbeMemo }).probeMemo = memo;
    const a = counted('a', [pass('a: before the change'), fail('a: after the change')]);
    const b = counted('b', [pass('b: before the change'), pass('b: after the change')]);
    startLooks(ctx, host, [a.check, b.check]);
    memo.forget();
    // The first check's turn (verify.ts starts them in it): the looks from before the change are replaced.
    startLooks(ctx, host, [a.check, b.check]);
    expect([a.seen.looks, b.seen.looks]).toEqual([2, 2]);
    await expect(a.gate.run(host, ctx, new AbortController().signal)).rejects.toMatchObject({ causeId: 'NODE_NOT_READY' });
    expect(c.rows).toEqual(['a k3s-prod-1 failed']);
  });

  it("a change between the looks' start and a check's turn: that check looks again", async () => {
    const { c, ctx } = context();
    const memo = new ProbeMemo();
    (ctx as { probeMemo?: ProbeMemo }).probeMemo = memo;
    const a = counted('a', [pass('a')]);
    const b = counted('b', [pass('b: before the change'), pass('b: after the change')]);
    startLooks(ctx, host, [a.check, b.check]);
    await a.gate.run(host, ctx, new AbortController().signal);
    memo.forget();
    await b.gate.run(host, ctx, new AbortController().signal);
    expect([a.seen.looks, b.seen.looks]).toEqual([1, 2]);
    expect(c.rows).toEqual(['a k3s-prod-1 ok', 'b k3s-prod-1 ok']);
  });
});
