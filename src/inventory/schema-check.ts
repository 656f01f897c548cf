// INVENTORY_SCHEMA: the shape of the file (unknown keys, wrong types, missing fields), checked with
// ajv against schema.ts. Every violation is reported, with a readable path and a plain message.
import { Ajv, type ErrorObject } from 'ajv';
import type { Violation } from '../errors.ts';
import { parseCidr, parseIPv4 } from './ipv4.ts';
import { inventorySchema } from './schema.ts';
import type { Inventory } from './types.ts';
import { formatPath, pointerSegments, type PathSegment } from './yaml-path.ts';

// validateSchema off: checking schema.ts against JSON Schema's meta-schema cost every run about 50 ms of CPU
// to compile that meta-schema; the schema is the project's own and fixed, and test/unit/inventory-schema.test.ts
// checks it against the meta-schema instead (strict mode still refuses unknown keywords as it compiles).
const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: true, verbose: true, validateSchema: false });
ajv.addFormat('ipv4', { type: 'string', validate: (s: string) => parseIPv4(s) !== null });
ajv.addFormat('ipv4-cidr', { type: 'string', validate: (s: string) => parseCidr(s) !== null });
const validate = ajv.compile(inventorySchema);

interface SchemaViolation extends Violation {
  segments: PathSegment[];
  /** For an unknown key: the path of the known key it is probably a typo of. */
  meant?: string;
  /** For a value of the wrong type: the JSON type the schema wants there. */
  expected?: string;
}

export interface SchemaResult {
  violations: SchemaViolation[];
  /**
   * A copy of the input with every default filled in (the input is not changed). It is an Inventory
   * only when there are no violations; ajv fills defaults even where other parts are wrong.
   */
  value: unknown;
}

/** Check the shape of the document against the schema. */
export function checkSchema(data: unknown): SchemaResult {
  const value = structuredClone(data);
  if (validate(value)) return { violations: [], value };
  const violations = dedupe((validate.errors ?? []).map((err) => toViolation(err, data)));
  // One typo, one violation: "adress" is unknown, so "address" is missing; say only the first.
  const meant = new Set(violations.flatMap((v) => (v.meant ? [v.meant] : [])));
  return { violations: violations.filter((v) => !(v.message.endsWith(' is required') && meant.has(v.path))), value };
}

/** Narrowing helper for callers that checked `violations` is empty. */
export function asInventory(value: unknown): Inventory {
  return value as Inventory;
}

function toViolation(err: ErrorObject, data: unknown): SchemaViolation {
  const segments = pointerSegments(err.instancePath, data);
  const at = formatPath(segments);
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'additionalProperties': {
      const key = String(p.additionalProperty);
      const known = Object.keys((err.parentSchema as { properties?: object })?.properties ?? {});
      const guess = closest(key, known);
      const full = [...segments, key];
      return {
        id: 'INVENTORY_SCHEMA',
        segments: full,
        path: formatPath(full),
        message: `unknown key "${key}"${at ? ` in ${at}` : ''}${guess ? ` (did you mean "${guess}"?)` : ''}`,
        ...(guess !== undefined && { meant: formatPath([...segments, guess]) }),
      };
    }
    case 'required': {
      const full = [...segments, String(p.missingProperty)];
      return { id: 'INVENTORY_SCHEMA', segments: full, path: formatPath(full), message: `${formatPath(full)} is required` };
    }
    case 'type':
      return {
        ...schemaViolation(segments, `${at || 'the document'} must be ${article(String(p.type))} (found ${describe(err.data)})`),
        expected: String(p.type),
      };
    case 'format':
      return schemaViolation(
        segments,
        p.format === 'ipv4'
          ? `${at} must be an IPv4 address like 192.168.2.10 (found "${String(err.data)}")`
          : `${at} must be an IPv4 network like 192.168.2.0/24 (found "${String(err.data)}")`,
      );
    case 'pattern': {
      const hint = (err.parentSchema as { description?: string })?.description;
      return schemaViolation(segments, `${at} is not valid: "${String(err.data)}"${hint ? ` (${hint})` : ''}`);
    }
    case 'const': {
      const hint = (err.parentSchema as { description?: string })?.description;
      return schemaViolation(segments, `${at} must be ${JSON.stringify(p.allowedValue)} (found ${describe(err.data)})${hint ? `: ${hint}` : ''}`);
    }
    case 'minItems':
      return schemaViolation(segments, `${at} must have at least ${String(p.limit)} item(s)`);
    default:
      return schemaViolation(segments, `${at} ${err.message ?? 'is not valid'}`);
  }
}

function schemaViolation(segments: PathSegment[], message: string): SchemaViolation {
  return { id: 'INVENTORY_SCHEMA', segments, path: formatPath(segments), message };
}

function article(type: string): string {
  const words: Record<string, string> = {
    integer: 'a whole number',
    number: 'a number',
    string: 'a string',
    boolean: 'true or false',
    array: 'a list',
    object: 'a mapping (key: value)',
  };
  return words[type] ?? type;
}

function describe(value: unknown): string {
  if (value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

function dedupe(violations: SchemaViolation[]): SchemaViolation[] {
  const seen = new Set<string>();
  return violations.filter((v) => {
    const key = `${v.path}\0${v.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The known key nearest to a misspelt one (edit distance ≤ 2), for "did you mean". */
function closest(key: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}
