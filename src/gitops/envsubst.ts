// Flux's postBuild substitution (fluxcd/pkg envsubst, as kustomize-controller runs it), re-implemented
// from its documented and observed behaviour, with one difference on purpose: it FAILS CLOSED. Flux (before
// kustomize-controller v1.9) turned an undefined ${VAR} into an empty string — the 2026-09-01 incident;
// here an undefined, empty or TBD… value is an error naming the variable.
//
// What Flux does, and so this does:
// - only `${…}` is an expression; `$VAR` without braces stays as it is; `$$` is an escaped `$`
//   (`$${VAR}` → the literal `${VAR}`);
// - `${VAR}`, `${#VAR}`, `${VAR^}` `${VAR^^}` `${VAR,}` `${VAR,,}`, `${VAR:off}` `${VAR:off:len}`,
//   `${VAR/pat/rep}` `${VAR//pat/rep}` `${VAR/#pat/rep}` `${VAR/%pat/rep}` (literal patterns);
// - defaults `${VAR:=d}` `${VAR=d}` `${VAR:-d}` (and `:?`/`:+`, which Flux evaluates as a default too): the
//   default is used when VAR is unset OR EMPTY; a default may nest `${OTHER}`;
// - `${VAR-d}` is not parsed by Flux ("missing closing brace") despite its README: an error here too.
// NOT evaluated here (fail closed, named): the glob trims `${VAR#p}` `${VAR##p}` `${VAR%p}` `${VAR%%p}`.
// NOTE: lengths and offsets count UTF-16 units, Flux counts bytes; they agree on ASCII values.

export type Problem = 'undefined' | 'empty' | 'placeholder' | 'syntax' | 'unsupported';

/** A ${…} that cannot be given a usable value. */
export class SubstitutionProblem extends Error {
  constructor(
    readonly variable: string,
    readonly problem: Problem,
    readonly expression: string,
    detail: string,
  ) {
    super(detail);
    this.name = 'SubstitutionProblem';
  }
}

/** A value the operator has not decided yet (the operator's convention: TBD-PROD-…). */
function isPlaceholder(value: string): boolean {
  return /^TBD/i.test(value.trim());
}

type Lookup = (name: string) => string | undefined;

const IDENT = /[\p{L}\p{N}_]/u;
const DEFAULT_OPS = new Set(['=', ':=', ':-', ':?', ':+']);

class Parser {
  pos = 0;
  constructor(
    readonly src: string,
    readonly lookup: Lookup,
  ) {}

  /** Top level: text with `$$` escapes and `${…}` expressions. */
  top(): string {
    let out = '';
    while (this.pos < this.src.length) {
      const c = this.src[this.pos];
      if (c === '$' && this.src[this.pos + 1] === '$') {
        out += '$';
        this.pos += 2;
      } else if (c === '$' && this.src[this.pos + 1] === '{') {
        out += this.expression();
      } else {
        out += c;
        this.pos++;
      }
    }
    return out;
  }

  /** At `${`: evaluate one expression and move past its `}`. */
  expression(): string {
    const start = this.pos;
    this.pos += 2;
    const fail = (problem: Problem, variable: string, why: string): never => {
      const end = this.src.indexOf('}', start);
      const expr = this.src.slice(start, end < 0 ? undefined : end + 1);
      throw new SubstitutionProblem(variable, problem, expr, `${expr}: ${why}`);
    };
    if (this.src[this.pos] === '#') {
      this.pos++;
      const name = this.ident();
      if (!name || this.src[this.pos] !== '}') return fail('syntax', name, 'Flux cannot parse this expression (bad substitution)');
      this.pos++;
      return String(this.value(name, fail).length);
    }
    const name = this.ident();
    if (!name) return fail('syntax', '', 'Flux cannot parse the variable name');
    const c = this.src[this.pos];
    if (c === '}') {
      this.pos++;
      return this.value(name, fail);
    }
    if (c === ',' || c === '^') {
      const op = this.src.slice(this.pos).match(/^([,^]{1,2})\}/)?.[1];
      if (!op) return fail('syntax', name, 'Flux cannot parse this case function');
      this.pos += op.length + 1;
      const v = this.value(name, fail);
      if (op === '^^') return v.toUpperCase();
      if (op === ',,') return v.toLowerCase();
      if (op === '^') return v.charAt(0).toUpperCase() + v.slice(1);
      return v.charAt(0).toLowerCase() + v.slice(1);
    }
    if (c === '#' || c === '%') return fail('unsupported', name, 'bootstrap does not evaluate glob trims; write the value itself into cluster-vars');
    if (c === '/') return this.replace(name, fail);
    const op = c === '=' ? '=' : c === ':' && '=-?+'.includes(this.src[this.pos + 1] ?? '') ? `:${this.src[this.pos + 1]}` : undefined;
    if (op && DEFAULT_OPS.has(op)) {
      this.pos += op.length;
      const fallback = this.argUntilClose();
      const v = this.lookup(name);
      if (v !== undefined && v !== '') return this.usable(name, v, fail);
      if (fallback === '') return fail('empty', name, `${name} is ${v === undefined ? 'not defined' : 'empty'} and the default is empty`);
      if (isPlaceholder(fallback)) return fail('placeholder', name, `${name} is not defined and the default "${fallback}" is a placeholder`);
      return fallback;
    }
    if (c === ':') return this.substring(name, fail);
    return fail('syntax', name, 'Flux cannot parse this expression (missing closing brace)');
  }

  ident(): string {
    const start = this.pos;
    while (this.pos < this.src.length && IDENT.test(this.src[this.pos])) this.pos++;
    return this.src.slice(start, this.pos);
  }

  /**
   * An argument: text and nested expressions, up to `}` (or another stop). Replace arguments unescape
   * `$$`, `\\` and `\/`; default arguments take the text as it is (as Flux's parser does).
   */
  argUntilClose(stop: string = '}', escapes = false): string {
    let out = '';
    while (this.pos < this.src.length) {
      const c = this.src[this.pos];
      const next = this.src[this.pos + 1];
      if (stop.includes(c)) {
        if (c === '}') this.pos++;
        return out;
      }
      if (c === '$' && next === '{') out += this.expression();
      else if (escapes && ((c === '$' && next === '$') || (c === '\\' && (next === '\\' || next === '/')))) {
        out += next;
        this.pos += 2;
      } else {
        out += c;
        this.pos++;
      }
    }
    throw new SubstitutionProblem('', 'syntax', this.src, 'missing closing brace');
  }

  replace(name: string, fail: (p: Problem, v: string, why: string) => never): string {
    const op = this.src.slice(this.pos).match(/^\/[/#%]?/)![0];
    this.pos += op.length;
    const pattern = this.argUntilClose('/}', true);
    let replacement = '';
    if (this.src[this.pos] === '/') {
      this.pos++;
      replacement = this.argUntilClose('}', true);
    } else if (this.src[this.pos - 1] !== '}') return fail('syntax', name, 'Flux cannot parse this replacement');
    const v = this.value(name, fail);
    if (op === '//') return v.split(pattern).join(replacement);
    if (op === '/#') return v.startsWith(pattern) ? replacement + v.slice(pattern.length) : v;
    if (op === '/%') return v.endsWith(pattern) ? v.slice(0, v.length - pattern.length) + replacement : v;
    return v.replace(pattern, () => replacement);
  }

  substring(name: string, fail: (p: Problem, v: string, why: string) => never): string {
    this.pos++;
    const m = this.src.slice(this.pos).match(/^([^:}]*)(?::([^}]*))?\}/);
    if (!m) return fail('syntax', name, 'Flux cannot parse this substring');
    this.pos += m[0].length;
    const v = this.value(name, fail);
    const off = Number.parseInt(m[1], 10);
    if (Number.isNaN(off)) return v;
    let pos = off < 0 ? Math.max(0, v.length + off) : off;
    if (m[2] === undefined) return pos < v.length ? v.slice(pos) : '';
    const len = Number.parseInt(m[2], 10);
    if (Number.isNaN(len)) return v;
    if (len < 0) return v.length + len < pos ? '' : v.slice(pos, v.length + len);
    pos = Math.min(pos, v.length);
    return v.slice(pos, pos + len);
  }

  /** The variable's value, failing closed: undefined, empty or TBD… stop. */
  value(name: string, fail: (p: Problem, v: string, why: string) => never): string {
    const v = this.lookup(name);
    if (v === undefined) return fail('undefined', name, `${name} is not defined in cluster-vars for this environment`);
    return this.usable(name, v, fail);
  }

  usable(name: string, v: string, fail: (p: Problem, v: string, why: string) => never): string {
    if (v.trim() === '') return fail('empty', name, `${name} is empty in cluster-vars for this environment`);
    if (isPlaceholder(v)) return fail('placeholder', name, `${name} is the placeholder "${v}" in cluster-vars for this environment`);
    return v;
  }
}

/**
 * Substitute one string as Flux would, failing closed. `vars` are cluster-vars' data (Flux removes every
 * newline from a value before substituting, and so does this).
 */
export function substitute(text: string, vars: Record<string, string>): string {
  const lookup: Lookup = (name) => (Object.hasOwn(vars, name) ? vars[name].replaceAll('\n', '') : undefined);
  return new Parser(text, lookup).top();
}

/** Whether a string holds anything Flux would substitute or unescape. */
export function hasSubstitution(text: string): boolean {
  return text.includes('${') || text.includes('$$');
}
