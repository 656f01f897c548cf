// A cause is the operator-facing name of a stop: id, title, what it means, what to do.
// Each area keeps its causes in its own file (one purpose per file); catalogue.ts joins them.

export interface CauseDef {
  /** One line, shown first. */
  title: string;
  /** What it means: why the tool stopped, in the operator's terms. */
  meaning: string;
  /** What to do about it. */
  remedy: string;
}

/** Identity helper that keeps the literal keys of an area's causes (so ids are a type). */
export function defineCauses<const T extends Record<string, CauseDef>>(causes: T): T {
  return causes;
}
