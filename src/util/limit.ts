// Runs `fn` over items with at most `limit` at once, and collects every failure instead of the
// first one: several hosts failing stay several causes (never one joined string). And a semaphore: at most
// n holders at once (the SSH channels open on one connection).

export async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<unknown[]> {
  const errors: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return errors;
}

/** At most n holders at once; the rest wait in order. */
export class Semaphore {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
