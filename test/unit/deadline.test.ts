// withDeadline: aborts at its deadline even when nothing else holds the signal, and with its parent.
import { expect, it } from 'vitest';
import { withDeadline } from '../../src/util/deadline.ts';

it('aborts at the deadline, after a garbage collection too', async () => {
  const signal = withDeadline(new AbortController().signal, 50);
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 120));
  expect(signal.aborted).toBe(true);
  expect((signal.reason as DOMException).name).toBe('TimeoutError');
});

it("aborts with its parent, at once, with the parent's reason", () => {
  const parent = new AbortController();
  const signal = withDeadline(parent.signal, 60_000);
  parent.abort(new Error('interrupted'));
  expect(signal.aborted).toBe(true);
  expect((signal.reason as Error).message).toBe('interrupted');
  expect(withDeadline(parent.signal, 60_000).aborted).toBe(true);
});
