// Substituting a whole resource as kustomize-controller does: it serialises the object to YAML (via JSON,
// so comments and quoting are gone), substitutes the text, and parses it back (sigs.k8s.io/yaml, YAML 1.1).
// Consequence kept here: a string emitted as a plain scalar is re-typed after substitution
// (`"${PORT}"` with PORT=6443 becomes the number 6443, `"${X}"` with X=true the boolean true), while a
// string the emitter must quote stays a string. Every problem is collected, not just the first.
import { parse } from 'yaml';
import { SubstitutionProblem, hasSubstitution, substitute } from './envsubst.ts';

export interface TreeProblem {
  /** Dotted path of the value in the resource (`spec.values.k8sServiceHost`). */
  path: string;
  /** The string as written. */
  written: string;
  problem: SubstitutionProblem;
}

/**
 * NOTE: an approximation of the YAML emitter's choice (go-yaml v2): a string is plain unless it is empty,
 * spans lines, has edge spaces, starts with an indicator or holds `: ` / ` #`.
 */
function emittedPlain(s: string): boolean {
  if (s === '' || s.includes('\n') || s !== s.trim()) return false;
  if (/^[-?:,[\]{}#&*!|>'"%@`]/.test(s)) return false;
  return !(s.includes(': ') || s.includes(' #') || s.endsWith(':'));
}

/** What a plain scalar's text reads back as under YAML 1.1 (a string when it is not a scalar). */
function retype(text: string): unknown {
  try {
    const v: unknown = parse(text, { version: '1.1' });
    return v === null || ['string', 'number', 'boolean'].includes(typeof v) ? v : text;
  } catch {
    return text;
  }
}

function substituteString(written: string, vars: Record<string, string>): unknown {
  const out = substitute(written, vars);
  return emittedPlain(written) ? retype(out) : out;
}

/** The resource with every string (keys too) substituted; problems instead of a result when any. */
export function substituteTree(node: unknown, vars: Record<string, string>): { value: unknown; problems: TreeProblem[] } {
  const problems: TreeProblem[] = [];
  const walk = (v: unknown, path: string): unknown => {
    if (typeof v === 'string') {
      if (!hasSubstitution(v)) return v;
      try {
        return substituteString(v, vars);
      } catch (err) {
        if (!(err instanceof SubstitutionProblem)) throw err;
        problems.push({ path, written: v, problem: err });
        return v;
      }
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = hasSubstitution(k) ? String(walk(k, path ? `${path}.${k}` : k)) : k;
        out[key] = walk(x, path ? `${path}.${key}` : key);
      }
      return out;
    }
    return v;
  };
  const value = walk(node, '');
  return { value, problems };
}
