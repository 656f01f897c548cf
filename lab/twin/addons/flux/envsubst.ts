// Flux's postBuild variable substitution as kustomize-controller v1.9 (Flux 2.9) runs it (fluxcd/pkg
// kustomize/kustomize_varsub.go with fluxcd/pkg/envsubst, strict mode on by default since v1.9): the
// variables are the substituteFrom ConfigMaps/Secrets in order, then spec.postBuild.substitute over them;
// newlines are removed from every value; with no variables at all nothing is substituted; a resource
// annotated or labelled kustomize.toolkit.fluxcd.io/substitute: disabled is left alone.
// Expressions: `${VAR}`, the defaults `${VAR:=d}` `${VAR:-d}` `${VAR=d}` `${VAR-d}` and `?`/`+` forms (all
// "d when VAR is unset or empty", fluxcd/pkg envsubst funcs.go toDefault), `$$` as an escaped `$`; `$VAR` without braces stays as it is. In strict mode a variable that
// is not set and has no default fails with `variable not set (strict mode): "VAR"`.
// NOT imitated: the string functions (`${#VAR}`, `${VAR^^}`, `${VAR/a/b}`, substrings) — they fail as
// unsupported, naming the expression.
export class SubstitutionError extends Error {}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

export function substitute(text: string, vars: Record<string, string>, strict = true): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '$' && text[i + 1] === '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (c !== '$' || text[i + 1] !== '{') {
      out += c;
      i++;
      continue;
    }
    const { value, end } = expression(text, i, vars, strict);
    out += value;
    i = end;
  }
  return out;
}

/** At `${`: the expression's value and the index after its `}`. */
function expression(text: string, start: number, vars: Record<string, string>, strict: boolean): { value: string; end: number } {
  const rest = text.slice(start + 2);
  const name = NAME.exec(rest)?.[0];
  if (!name) throw new SubstitutionError(`variable substitution failed: bad substitution at offset ${start}`);
  let j = start + 2 + name.length;
  const set = Object.hasOwn(vars, name);
  const val = set ? vars[name] : undefined;
  if (text[j] === '}') {
    if (!set && strict) throw new SubstitutionError(`variable substitution failed: variable not set (strict mode): "${name}"`);
    return { value: val ?? '', end: j + 1 };
  }
  // Every default-giving operator is "the default when unset or empty" in fluxcd/pkg/envsubst (toDefault).
  const op = /^(:=|:-|:\?|:\+|=|-|\?|\+)/.exec(text.slice(j))?.[0];
  if (!op) {
    const close = text.indexOf('}', j);
    throw new SubstitutionError(`variable substitution failed: unsupported expression ${text.slice(start, close < 0 ? undefined : close + 1)}`);
  }
  j += op.length;
  // The default runs to the matching brace and may hold expressions of its own.
  let depth = 1;
  let k = j;
  for (; k < text.length; k++) {
    if (text[k] === '{' && text[k - 1] === '$') depth++;
    else if (text[k] === '}' && --depth === 0) break;
  }
  if (k >= text.length) throw new SubstitutionError('variable substitution failed: missing closing brace');
  // The default is evaluated first, as upstream evaluates a function's arguments before its variable.
  const fallback = substitute(text.slice(j, k), vars, strict);
  return { value: val !== undefined && val !== '' ? val : fallback, end: k + 1 };
}

const DISABLED = 'kustomize.toolkit.fluxcd.io/substitute';

export function substitutionDisabled(doc: any): boolean {
  return doc?.metadata?.annotations?.[DISABLED] === 'disabled' || doc?.metadata?.labels?.[DISABLED] === 'disabled';
}

/** The variables of a Kustomization: substituteFrom sources in order, then the inline ones; newlines removed. */
export function mergeVars(sources: Record<string, string>[], inline: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of [...sources, inline ?? {}]) for (const [k, v] of Object.entries(s)) out[k] = String(v).replaceAll('\n', '');
  return out;
}
