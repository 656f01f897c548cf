// Comparing k3s versions (v1.31.4+k3s1): a backup may be restored onto the same or a newer k3s, not an
// older one (SNAPSHOT_VERSION_NEWER).
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

function parts(v: string): number[] {
  const m = v.trim().match(/^v?(\d+)\.(\d+)\.(\d+)(?:[-+]k3s(\d+))?/);
  if (!m) throw new RangeError(`not a k3s version: ${v}`);
  return [m[1], m[2], m[3], m[4] ?? '0'].map(Number);
}

/** Negative when a < b, 0 when equal, positive when a > b. */
export function compareK3sVersions(a: string, b: string): number {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

const VERSION_LINE = /k3s version (v[\w.+-]+)/;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { VERSION_LINE };

/** The version in `k3s --version`'s first line (`k3s version v1.31.4+k3s1 (abcdef)`). */
export function versionFromOutput(out: string): string | undefined {
  return out.match(VERSION_LINE)?.[1];
}
