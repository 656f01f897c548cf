// The few error classes the tool knows. They are caught once, in the CLI (cli/main.ts):
// an expected stop prints its cause; anything else is a bug and prints its stack.
import { causeInfo, type CauseId } from './causes/catalogue.ts';

/** What was seen when a gate stopped: enough for the operator to confirm it by hand. */
export interface Evidence {
  /** The command that showed it (remote or local), secrets already redacted. */
  command?: string;
  exitCode?: number | null;
  /** A short excerpt of output or a log (journal lines, pod log). */
  excerpt?: string;
  /** One line: what the gate saw, in words. */
  seen?: string;
}

/** Base for every expected stop. Subclasses decide the exit code. */
export abstract class BootstrapError extends Error {
  abstract readonly exitCode: number;
}

/** A named cause: a gate or a contract stopped the run. Exit 1. */
export class CauseError extends BootstrapError {
  readonly exitCode = 1;
  readonly causeId: CauseId;
  readonly host?: string;
  readonly evidence: Evidence;
  /** Whether retrying could ever help (host key mismatch, auth failure: never). */
  readonly retryable: boolean;
  override readonly cause?: unknown;
  /** A remedy for this stop instead of the catalogue's, when the situation changes what to do. */
  private readonly remedyHere?: string;

  constructor(causeId: CauseId, opts: { host?: string; evidence?: Evidence; message?: string; retryable?: boolean; cause?: unknown; remedy?: string } = {}) {
    const info = causeInfo(causeId);
    super(opts.message ?? info.title);
    this.name = 'CauseError';
    this.causeId = causeId;
    this.host = opts.host;
    this.evidence = opts.evidence ?? {};
    this.retryable = opts.retryable ?? false;
    this.cause = opts.cause;
    this.remedyHere = opts.remedy;
  }

  get remedy(): string {
    return this.remedyHere ?? causeInfo(this.causeId).remedy;
  }

  get runbook(): string {
    return causeInfo(this.causeId).runbook;
  }

  toJSON() {
    return {
      cause: this.causeId,
      host: this.host,
      message: this.message,
      evidence: this.evidence,
      remedy: this.remedy,
      runbook: this.runbook,
    };
  }
}

/** Several named causes at once (for example every failing host of a parallel phase). Exit 1. */
export class CauseErrors extends BootstrapError {
  readonly exitCode = 1;
  constructor(readonly errors: CauseError[]) {
    super(errors.map((e) => e.causeId).join(', '));
    this.name = 'CauseErrors';
  }
}

/** One broken inventory contract, with the YAML path it concerns. */
export interface Violation {
  id: CauseId;
  message: string;
  path: string;
}

/** The inventory breaks one or more contracts; all of them are reported at once. Exit 65. */
export class InventoryInvalid extends BootstrapError {
  readonly exitCode = 65;
  constructor(
    readonly file: string,
    readonly violations: Violation[],
  ) {
    super(`${file}: ${violations.length} contract violation(s)`);
    this.name = 'InventoryInvalid';
  }
}

/** The command line itself is wrong. Exit 64 (EX_USAGE). */
export class UsageError extends BootstrapError {
  readonly exitCode = 64;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Check mode found changes to make. Not an error for the operator, but it decides the exit code (2). */
export const EXIT_WOULD_CHANGE = 2;

/** Every error in a CauseErrors/CauseError tree, flattened (for renderers and tests). */
export function causesOf(err: unknown): CauseError[] {
  if (err instanceof CauseError) return [err];
  if (err instanceof CauseErrors) return err.errors;
  return [];
}

/**
 * What a run stops with when several things failed at once (hosts of a parallel phase, every stop of a
 * check): one cause as itself, several as CauseErrors, and a bug — anything that is not a named cause —
 * as the bug itself, whatever causes came with it, so it is never hidden behind them.
 */
export function stopOf(errors: readonly CauseError[]): CauseError | CauseErrors;
export function stopOf(errors: readonly unknown[]): unknown;
export function stopOf(errors: readonly unknown[]): unknown {
  if (errors.length === 0) throw new Error('stopOf: nothing failed');
  const bug = errors.find((e) => causesOf(e).length === 0);
  if (bug !== undefined) return bug;
  const causes = errors.flatMap(causesOf);
  return causes.length === 1 ? causes[0] : new CauseErrors(causes);
}

/**
 * The named causes an error stands for, for a hook that reports stops instead of throwing them (a phase's
 * prepare); anything else is a bug and is thrown again as itself.
 */
export function causesOrThrow(err: unknown): CauseError[] {
  const causes = causesOf(err);
  if (!causes.length) throw err;
  return causes;
}
