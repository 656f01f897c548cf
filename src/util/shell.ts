// POSIX shell quoting for the commands the engine composes. Values from the inventory pass through here.

/** `it's` → `'it'\''s'`: safe as one word in sh. */
export function shq(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
