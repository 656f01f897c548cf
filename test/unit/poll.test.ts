// The one poll of every bounded wait: it looks at once, pauses between looks as told, ends with the first
// answer, and gives up (undefined) when its signal ends or its own window has passed; a look's throw ends it.
import { describe, expect, it } from 'vitest';
import { poll } from '../../src/engine/poll.ts';

/** A clock whose sleeps advance time at once, and that rejects a sleep on an aborted signal as the real one does. */
function fakeClock() {
  const c = { t: 0, sleeps: [] as number[] };
  const clock = {
    now: () => c.t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      c.sleeps.push(ms);
      c.t += ms;
    },
  };
  return { c, ctx: { clock } };
}

describe('poll', () => {
  it('looks at once and ends with the first answer, pausing everyMs between looks', async () => {
    const { c, ctx } = fakeClock();
    const seen: number[] = [];
    const r = await poll(ctx, new AbortController().signal, { everyMs: 2_000, look: async (n) => (seen.push(n), n === 3 ? 'ready' : undefined) });
    expect(r).toBe('ready');
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(c.sleeps).toEqual([2_000, 2_000, 2_000]);
  });

  it('asks everyMs for each pause by the number of pauses taken so far', async () => {
    const { c, ctx } = fakeClock();
    await poll(ctx, new AbortController().signal, { everyMs: (n) => (n < 2 ? 1_000 : 5_000), look: async (n) => (n === 4 ? true : undefined) });
    expect(c.sleeps).toEqual([1_000, 1_000, 5_000, 5_000]);
  });

  it('gives up when the signal ends, after the look under way', async () => {
    const { ctx } = fakeClock();
    const budget = new AbortController();
    let looks = 0;
    const r = await poll(ctx, budget.signal, { everyMs: 1_000, look: async () => (++looks === 3 && budget.abort(), undefined) });
    expect(r).toBeUndefined();
    expect(looks).toBe(3);
  });

  it('gives up when withinMs has passed: no look starts after it', async () => {
    const { c, ctx } = fakeClock();
    const r = await poll(ctx, new AbortController().signal, { everyMs: 500, withinMs: 2_000, look: async () => undefined });
    expect(r).toBeUndefined();
    expect(c.t).toBe(2_000);
    expect(c.sleeps.length).toBe(4);
  });

  it('ends with a look that throws', async () => {
    const { ctx } = fakeClock();
    await expect(
      poll(ctx, new AbortController().signal, {
        everyMs: 1,
        look: async () => {
          throw new Error('named cause');
        },
      }),
    ).rejects.toThrow('named cause');
  });

  it('does not pause on a signal already aborted, even on a clock that would sleep', async () => {
    const ended = AbortSignal.abort();
    let looks = 0;
    const r = await poll({ clock: { now: () => 0, sleep: async () => undefined } }, ended, { everyMs: 1, look: async () => (looks++, undefined) });
    expect(r).toBeUndefined();
    expect(looks).toBe(1);
  });
});
