// Text helpers for evidence: what a stop shows of a command's output or a log.

/** The last `n` lines of `text` (trailing blank lines dropped): the part of an output that says why. */
export function lastLines(text: string, n: number): string {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}
