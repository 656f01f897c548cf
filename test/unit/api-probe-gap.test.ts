// The rolling upgrade's measure of the API through the VIP (test/support/api-probe.ts): a gap is the time
// between two probes that answered ok, from when the server accepted each, and only where a probe failed.
import { describe, expect, it } from 'vitest';
import { longestGap } from '../support/api-probe.ts';

const at = (t: number) => `${(t / 1000).toFixed(1)} s`;
const ok = (startedAt: number, acceptedAt = startedAt + 2) => ({ ok: true, how: 'ok', startedAt, acceptedAt });
const failed = (startedAt: number, how = 'ECONNREFUSED after 1 ms') => ({ ok: false, how, startedAt });

describe('longestGap', () => {
  it('a loaded machine that answers late: accepted every 200 ms, nothing failed, no gap', () => {
    const probes = [0, 200, 400, 600].map((t) => ({ ...ok(t), how: 'ok in 2900 ms' }));
    expect(longestGap(probes, 0, 800, at).ms).toBe(0);
  });

  it('a refused stretch between two oks: the time between their accepts, with the failures named', () => {
    const probes = [ok(0), failed(200), failed(400), failed(600), ok(800)];
    const gap = longestGap(probes, 0, 1_000, at);
    expect(gap.ms).toBe(800);
    expect(gap.seen).toBe('from 0.0 s to 0.8 s; failed: 0.2 s ECONNREFUSED after 1 ms; 0.4 s ECONNREFUSED after 1 ms; 0.6 s ECONNREFUSED after 1 ms');
  });

  it('an ok whose connection waited for a SYN retransmit counts from its accept, not its start', () => {
    const probes = [ok(0), failed(200, 'timeout after 3000 ms'), ok(400, 3_400)];
    expect(longestGap(probes, 0, 3_600, at).ms).toBe(3_398);
  });

  it('failures after the last ok run to the end of the watch; before the first, from its start', () => {
    expect(longestGap([ok(0), failed(2_000)], 0, 5_000, at).ms).toBe(4_998);
    expect(longestGap([failed(0), ok(1_500)], 0, 2_000, at).ms).toBe(1_502);
  });
});
