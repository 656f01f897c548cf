// Runs `fn` over items with at most `limit` at once, and collects every failure instead of the
// first one: several hosts failing stay several causes (never one joined string).

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
