// sha256sum's list format, parsed without I/O: the run's upload steps read it from the hosts' answers, where
// the artifacts' download module (and its HTTP clients) need not load.

/**
 * `<hex>  <name>` (or `<hex> *<name>`, binary mode) lines → the hex for `name`: a release's list, or what
 * sha256sum printed for files on a host (a name may hold spaces).
 */
export function sha256FromList(text: string, name: string): string | undefined {
  for (const line of text.split('\n')) {
    const m = /^([0-9a-fA-F]{64})\s+\*?(?:\.\/)?(\S(?:.*\S)?)\s*$/.exec(line.trim());
    if (m && m[2] === name) return m[1].toLowerCase();
  }
  return undefined;
}
