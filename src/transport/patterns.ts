// OpenSSH's host patterns (ssh_config `Host`, known_hosts host fields): `*` matches any run of
// characters, `?` exactly one, and a leading `!` negates. In a list, one negated match vetoes the
// whole list, whatever else matches (ssh's match_pattern_list).

/** Whether `s` matches one wildcard pattern (whole string; no negation here). */
export function matchPattern(s: string, pattern: string): boolean {
  // Iterative glob with backtracking to the last `*`: linear enough for host names.
  let si = 0;
  let pi = 0;
  let star = -1;
  let mark = 0;
  while (si < s.length) {
    if (pi < pattern.length && (pattern[pi] === '?' || pattern[pi] === s[si])) {
      si++;
      pi++;
    } else if (pi < pattern.length && pattern[pi] === '*') {
      star = pi++;
      mark = si;
    } else if (star !== -1) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < pattern.length && pattern[pi] === '*') pi++;
  return pi === pattern.length;
}

/**
 * Match `s` against a list of patterns (already split, or a comma-separated string).
 * true: a positive pattern matched and no negated one did; false: a negated pattern matched;
 * undefined: nothing matched.
 */
export function matchPatternList(s: string, list: string | string[]): boolean | undefined {
  const patterns = typeof list === 'string' ? list.split(',') : list;
  let positive = false;
  for (const p of patterns) {
    if (p === '') continue;
    if (p.startsWith('!')) {
      if (matchPattern(s, p.slice(1))) return false;
    } else if (matchPattern(s, p)) {
      positive = true;
    }
  }
  return positive ? true : undefined;
}
