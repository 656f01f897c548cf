// Paths the operator can read: `servers[1].address`, `controlPlane.vip` (not JSON pointers).

export type PathSegment = string | number;

/** `['servers', 1, 'address']` → `servers[1].address` */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else out += out === '' ? s : `.${s}`;
  }
  return out;
}

/**
 * A JSON pointer (`/servers/1/address`, as ajv reports it) → path segments. A numeric segment is an
 * array index only when the data at that point is an array (a map key may look like a number).
 */
export function pointerSegments(pointer: string, data: unknown): PathSegment[] {
  if (pointer === '') return [];
  const segments: PathSegment[] = [];
  let at: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at) && /^\d+$/.test(key)) {
      segments.push(Number(key));
      at = at[Number(key)];
    } else {
      segments.push(key);
      at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
    }
  }
  return segments;
}

/** `servers[1].address` → `['servers', 1, 'address']` (the inverse of formatPath). */
export function parsePath(path: string): PathSegment[] {
  const segments: PathSegment[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    segments.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  }
  return segments;
}
