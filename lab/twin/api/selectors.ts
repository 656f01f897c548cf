// Label and field selectors as the API server parses them (k8s.io/apimachinery labels.Parse, fields).
type Req = { key: string; op: 'eq' | 'ne' | 'in' | 'notin' | 'exists' | 'notexists'; values: string[] };

function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur);
  return out.map((x) => x.trim()).filter(Boolean);
}

export function parseLabelSelector(sel: string): Req[] {
  return splitTop(sel).map((part) => {
    let m = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(part);
    if (m)
      return {
        key: m[1],
        op: m[2] as 'in' | 'notin',
        values: m[3]
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean),
      };
    m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (m) return { key: m[1].trim(), op: m[2] === '!=' ? 'ne' : 'eq', values: [m[3].trim()] };
    if (part.startsWith('!')) return { key: part.slice(1).trim(), op: 'notexists', values: [] };
    return { key: part, op: 'exists', values: [] };
  });
}

export function matchLabels(reqs: Req[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return reqs.every((q) => {
    const has = Object.prototype.hasOwnProperty.call(l, q.key);
    const v = l[q.key];
    switch (q.op) {
      case 'eq':
        return has && v === q.values[0];
      case 'ne':
        return !has || v !== q.values[0];
      case 'in':
        return has && q.values.includes(v);
      case 'notin':
        return !has || !q.values.includes(v);
      case 'exists':
        return has;
      case 'notexists':
        return !has;
    }
  });
}

function dig(obj: any, path: string): string | undefined {
  let cur = obj;
  for (const p of path.split('.')) cur = cur?.[p];
  return cur === undefined || cur === null ? undefined : String(cur);
}

/** Field selectors: equality on dotted paths (metadata.name, metadata.namespace, spec.nodeName, …). */
export function matchFields(sel: string, obj: any): boolean {
  return splitTop(sel).every((part) => {
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) return true;
    const v = dig(obj, m[1].trim()) ?? '';
    return m[2] === '!=' ? v !== m[3] : v === m[3];
  });
}
