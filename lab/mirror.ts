// Which Debian mirror debootstrap uses: the one this machine's apt already uses for the suite, so the
// lab never names a mirror of its own. BOOTSTRAP_LAB_MIRROR overrides it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Finds a URI serving `suite` (exactly, not suite-security/-updates) in apt sources texts. */
export function findMirror(texts: string[], suite: string): string | undefined {
  for (const text of texts) {
    // deb822 (.sources): blank-line separated stanzas.
    for (const stanza of text.split(/\n\s*\n/)) {
      const field = (name: string) =>
        stanza
          .match(new RegExp(`^${name}:\\s*(.+)$`, 'mi'))?.[1]
          ?.trim()
          .split(/\s+/) ?? [];
      const types = field('Types');
      const suites = field('Suites');
      const uris = field('URIs');
      if (types.includes('deb') && suites.includes(suite) && uris[0]) return uris[0];
    }
    // one-line format: deb [options] URI suite components...
    for (const line of text.split('\n')) {
      const m = line.trim().match(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/);
      if (m && m[2] === suite) return m[1];
    }
  }
  return undefined;
}

export function machineMirror(suite: string): string | undefined {
  if (process.env.BOOTSTRAP_LAB_MIRROR) return process.env.BOOTSTRAP_LAB_MIRROR;
  const texts: string[] = [];
  const read = (p: string) => {
    try {
      texts.push(readFileSync(p, 'utf8'));
    } catch {
      /* absent */
    }
  };
  read('/etc/apt/sources.list');
  try {
    for (const f of readdirSync('/etc/apt/sources.list.d').sort()) read(join('/etc/apt/sources.list.d', f));
  } catch {
    /* absent */
  }
  return findMirror(texts, suite);
}
