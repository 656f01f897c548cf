// YAML text → plain data, keeping the document so violations can name the line they concern.
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { Violation } from '../errors.ts';
import type { PathSegment } from './yaml-path.ts';

interface ParsedYaml {
  data: unknown;
  /** 1-based line and column of the key (or item) at a path, or of its nearest existing parent. */
  positionOf(segments: readonly PathSegment[]): { line: number; col: number } | undefined;
}

export type ParseResult = { ok: true; parsed: ParsedYaml } | { ok: false; violations: Violation[] };

export function parseYaml(text: string): ParseResult {
  const lineCounter = new LineCounter();
  // uniqueKeys: a key written twice is an error, not "the last one wins" (a value would be written twice).
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    // Only the first: later syntax errors are mostly echoes of it, and the file is read no further.
    const err = doc.errors[0];
    const line = lineCounter.linePos(err.pos[0]).line;
    const what = err.message.split('\n')[0];
    return {
      ok: false,
      violations: [{ id: 'INVENTORY_SCHEMA', path: '', message: `YAML syntax error at line ${line}: ${what}` }],
    };
  }
  // A collection as a key (`? [a, b]\n: 1`) has no meaning in an inventory; yaml would stringify it and
  // print a Node warning on stderr, so it is refused here, naming its line.
  const complexKey = firstComplexKey(doc.contents);
  if (complexKey !== undefined) {
    const line = lineCounter.linePos(complexKey).line;
    return { ok: false, violations: [schemaError(`a key at line ${line} is a list, a map or an alias; every key of an inventory is a plain name`)] };
  }
  // yaml refuses an alias bomb (over 100 expansions) and an alias to no anchor by throwing; both are
  // the file's fault, so they are a cause like any syntax error, not a crash.
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return { ok: false, violations: [schemaError(`YAML alias error: ${(err as Error).message}`)] };
  }
  if (isCyclic(data)) {
    return { ok: false, violations: [schemaError('YAML alias error: an alias refers to the node that contains it')] };
  }
  if (data === null || data === undefined) {
    return { ok: false, violations: [{ id: 'INVENTORY_SCHEMA', path: '', message: 'the inventory file is empty' }] };
  }
  return {
    ok: true,
    parsed: { data, positionOf: (segments) => positionOf(doc, lineCounter, segments) },
  };
}

function schemaError(message: string): Violation {
  return { id: 'INVENTORY_SCHEMA', path: '', message };
}

/** The offset of the first key that is not a plain scalar (a list, a map or an alias), walking maps and lists. */
function firstComplexKey(root: unknown): number | undefined {
  const stack: unknown[] = [root];
  while (stack.length) {
    const node = stack.pop();
    if (isMap(node)) {
      for (const pair of node.items) {
        if (pair.key !== null && !isScalar(pair.key)) {
          return (pair.key as Node).range?.[0] ?? 0;
        }
        stack.push(pair.value);
      }
    } else if (isSeq(node)) {
      stack.push(...node.items);
    }
  }
  return undefined;
}

/** A self-referencing alias (`a: &r [*r]`) makes a cyclic value every later walk would recurse into forever. */
function isCyclic(value: unknown, above = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (above.has(value)) return true;
  above.add(value);
  const cyclic = Object.values(value).some((v) => isCyclic(v, above));
  above.delete(value);
  return cyclic;
}

function positionOf(
  doc: Document,
  lines: LineCounter,
  segments: readonly PathSegment[],
): { line: number; col: number } | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined = (node as Node | null)?.range?.[0];
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      offset = (pair.key as Node).range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset === undefined ? undefined : lines.linePos(offset);
}
