// A pause that keeps no process alive on its own (the timer is unref'd).
export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
