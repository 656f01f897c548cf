// Every bounded wait of the engine: look, pause, look again, until the look has an answer or the budget
// is spent. The budget is the signal (a gate's budget, Ctrl-C) and, for a wait shorter than its gate's
// budget, `withinMs`; the pause is the injected clock's, so waits are testable without sleeping.
import type { Clock } from './clock.ts';

export interface PollOptions<T> {
  /** The pause between two looks in ms; a function of the pauses taken so far (0, 1, …) for a wait that slows down. */
  everyMs: number | ((pauses: number) => number);
  /** One look (`attempt` counts from 0): a value ends the wait with it, undefined looks again. A throw ends it too. */
  look: (attempt: number) => Promise<T | undefined>;
  /** No look starts once this many ms have passed since the first one began. */
  withinMs?: number;
}

/**
 * Looks at once, then after each pause until `look` returns a value (resolved with it), the signal is
 * aborted or `withinMs` has passed (resolved undefined: the caller names what it saw last).
 */
export async function poll<T>(ctx: { clock: Clock }, signal: AbortSignal, o: PollOptions<T>): Promise<T | undefined> {
  const t0 = ctx.clock.now();
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && o.withinMs !== undefined && ctx.clock.now() - t0 >= o.withinMs) return undefined;
    const answer = await o.look(attempt);
    if (answer !== undefined) return answer;
    if (signal.aborted) return undefined;
    const ms = typeof o.everyMs === 'number' ? o.everyMs : o.everyMs(attempt);
    try {
      await ctx.clock.sleep(ms, signal);
    } catch {
      return undefined;
    }
  }
}
