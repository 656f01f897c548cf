// Channel plumbing without a server: a tunnel that never opens gives up at its budget, and a stream
// that opens too late is closed rather than leaked.
import { describe, expect, it } from 'vitest';
import { forwardOut, type Link } from '../../src/transport/link.ts';
import { Semaphore } from '../../src/util/limit.ts';

function fakeLink(onForward: (cb: (err: Error | undefined, ch: { close: () => void }) => void) => void): Link {
  return { client: { forwardOut: (_a: string, _b: number, _c: string, _d: number, cb: never) => onForward(cb) } } as unknown as Link;
}

describe('forwardOut', () => {
  it('gives up at its budget when the far end never connects, and closes a stream that opens later', async () => {
    let late: ((err: Error | undefined, ch: { close: () => void }) => void) | undefined;
    const started = Date.now();
    const err = await forwardOut(
      fakeLink((cb) => (late = cb)),
      '10.0.0.5',
      22,
      100,
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', message: 'no TCP connection to 10.0.0.5:22 within 100 ms' });
    expect(Date.now() - started).toBeLessThan(1_000);
    let closed = false;
    late!(undefined, { close: () => (closed = true) });
    expect(closed).toBe(true);
  });

  it("passes the far end's refusal through", async () => {
    const refused = new Error('(SSH) Channel open failure: Connection refused');
    await expect(
      forwardOut(
        fakeLink((cb) => cb(refused, undefined as never)),
        '127.0.0.1',
        6443,
        1_000,
      ),
    ).rejects.toBe(refused);
  });
});

describe('Semaphore', () => {
  it('lets n holders in at once and the next in order as each leaves', async () => {
    const s = new Semaphore(2);
    const order: string[] = [];
    const a = await s.acquire();
    const b = await s.acquire();
    const c = s.acquire().then((r) => (order.push('c'), r));
    const d = s.acquire().then((r) => (order.push('d'), r));
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([]);
    a();
    a(); // releasing twice frees one slot only
    await c;
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual(['c']);
    b();
    await d;
    expect(order).toEqual(['c', 'd']);
  });
});
