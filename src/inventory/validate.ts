// `bootstrap validate`: every contract of the file itself, no connection and no file checks.
// Order of checks: YAML syntax → placeholders (whole document) → schema → contracts. A value that
// is a placeholder yields PLACEHOLDER_VALUE only, not also a schema error for the same path.
// Contracts need the right shape, so they run when the only schema errors are placeholders.
import type { Violation } from '../errors.ts';
import { checkContracts } from './contracts.ts';
import { parseYaml } from './parse.ts';
import { findPlaceholders } from './placeholders.ts';
import { asInventory, checkSchema } from './schema-check.ts';
import type { Inventory, InventoryWarning } from './types.ts';
import { parsePath, type PathSegment } from './yaml-path.ts';

export interface ValidationResult {
  ok: boolean;
  /** Every broken contract, in the order of the file (by line). */
  violations: Violation[];
  warnings: InventoryWarning[];
  /** The inventory with defaults applied; present when ok. */
  inventory?: Inventory;
}

/** Exactly what `bootstrap validate --json` prints. */
export interface ValidateJson {
  ok: boolean;
  causes: { id: string; message: string; path: string }[];
}

export interface ValidateOptions {
  /** `--allow-even` (and a `--remove`, which judges the servers that stay): an even server count passes. */
  allowEven?: boolean;
}

/** A waiver's reason is judged by WAIVER_INVALID, not as a generic placeholder. */
const isWaiverReason = (s: PathSegment[]) => s.length === 3 && s[0] === 'waivers' && s[2] === 'reason';

/**
 * Validate inventory text. `fileBaseName` is the file's name without folder (".yaml"/".yml" is
 * stripped); `environment` must equal it. Pure: no I/O.
 */
export function validateInventory(text: string, fileBaseName?: string, opts: ValidateOptions = {}): ValidationResult {
  const parsed = parseYaml(text);
  if (!parsed.ok) return { ok: false, violations: parsed.violations, warnings: [] };
  const { data, positionOf } = parsed.parsed;

  const placeholders = findPlaceholders(data, isWaiverReason);
  const underPlaceholder = (path: string) =>
    placeholders.find((p) => path === p.path || path.startsWith(`${p.path}.`) || path.startsWith(`${p.path}[`));
  const schema = checkSchema(data);
  const unexplained = schema.violations.filter((v) => !underPlaceholder(v.path));
  // An empty value (`vip:` → null) leaves a hole contracts cannot read, and so does a placeholder where a
  // section or list belongs (`agents: TBD`, `servers: [TBD]`, a whole document `TBD`); a placeholder
  // string where a string belongs they skip.
  const holes = schema.violations.some((v) => {
    const p = underPlaceholder(v.path);
    if (p === undefined) return false;
    return valueAt(data, parsePath(p.path)) === null || v.expected === 'object' || v.expected === 'array';
  });

  let violations: Violation[] = [...placeholders, ...unexplained];
  let warnings: InventoryWarning[] = [];
  if (unexplained.length === 0 && !holes) {
    const base = fileBaseName === undefined ? undefined : stripYamlExtension(fileBaseName);
    const contracts = checkContracts(asInventory(schema.value), base);
    violations = [...violations, ...contracts.violations.filter((v) => !(opts.allowEven && v.id === 'SERVER_COUNT_EVEN'))];
    warnings = contracts.warnings;
  }
  violations = inFileOrder(violations.map(toPlain), (path) => positionOf(parsePath(path)));
  const ok = violations.length === 0;
  return { ok, violations, warnings, ...(ok && { inventory: asInventory(schema.value) }) };
}

export function toValidateJson(result: Pick<ValidationResult, 'ok' | 'violations'>): ValidateJson {
  return { ok: result.ok, causes: result.violations.map(({ id, message, path }) => ({ id, message, path })) };
}

export function stripYamlExtension(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? name;
  return base.replace(/\.ya?ml$/, '');
}

function toPlain(v: Violation): Violation {
  return { id: v.id, message: v.message, path: v.path };
}

type Position = { line: number; col: number };

/** Sort by where the path is in the file (stable), and say the line in the message. */
function inFileOrder(violations: Violation[], positionOf: (path: string) => Position | undefined): Violation[] {
  const placed = violations.map((v, i) => ({ v, i, at: v.path === '' ? undefined : positionOf(v.path) }));
  placed.sort((a, b) => (a.at?.line ?? 0) - (b.at?.line ?? 0) || (a.at?.col ?? 0) - (b.at?.col ?? 0) || a.i - b.i);
  return placed.map(({ v, at }) => (at === undefined ? v : { ...v, message: `${v.message} (line ${at.line})` }));
}

function valueAt(data: unknown, segments: PathSegment[]): unknown {
  let at = data;
  for (const s of segments) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string | number, unknown>)[s];
  }
  return at;
}
