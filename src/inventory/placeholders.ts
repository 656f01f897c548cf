// PLACEHOLDER_VALUE: values nobody has decided yet. The operator's GitOps repository marks them
// `TBD-PROD-…` and `${VAR}` on purpose, because an invalid value that fails loudly is safer than a
// plausible one that quietly comes up on the wrong network. This scan covers the whole document.
import type { Violation } from '../errors.ts';
import { formatPath, type PathSegment } from './yaml-path.ts';

/** Why a string is a placeholder, or null when it is a real value. */
export function placeholderReason(value: string): string | null {
  if (value.trim() === '') return 'is empty';
  // Names are lower-case RFC 1123 labels, so an upper-case TBD prefix never collides with a real one.
  if (/^\s*TBD/.test(value)) return `still reads "${value}" (not decided yet)`;
  const variable = firstVariable(value);
  if (variable) return `contains "${variable}", a variable nothing substitutes here`;
  return null;
}

/**
 * The first `${…}` in a string. A scan, not /\$\{[^}]*\}/: that regex retries from every `${` of an
 * unclosed run and takes quadratic time (a 320 KB value of `${` took 17 s).
 */
function firstVariable(value: string): string | undefined {
  const start = value.indexOf('${');
  if (start < 0) return undefined;
  const end = value.indexOf('}', start + 2);
  return end < 0 ? undefined : value.slice(start, end + 1);
}

/**
 * Every placeholder in the document: TBD…, ${…}, empty strings and empty values (`key:` with
 * nothing after it). `skip` names paths checked elsewhere (a waiver's reason is WAIVER_INVALID).
 */
export function findPlaceholders(data: unknown, skip: (segments: PathSegment[]) => boolean = () => false): Violation[] {
  const found: Violation[] = [];
  const walk = (value: unknown, segments: PathSegment[]): void => {
    if (segments.length > 0 && skip(segments)) return;
    if (value === null || value === undefined) {
      if (segments.length > 0) found.push(violation(segments, 'has no value'));
    } else if (typeof value === 'string') {
      const reason = placeholderReason(value);
      if (reason) found.push(violation(segments, reason));
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...segments, i]));
    } else if (typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) walk(item, [...segments, key]);
    }
  };
  walk(data, []);
  return found;
}

function violation(segments: PathSegment[], reason: string): Violation {
  const path = formatPath(segments);
  return { id: 'PLACEHOLDER_VALUE', path, message: `${path} ${reason}` };
}
