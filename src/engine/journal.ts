// The journal of a run, kept per environment on the operator's machine, so that `--resume` continues
// after the last completed (phase, host) of an interrupted run. Granularity is a phase on a host: every
// step is idempotent, so redoing the steps of a half-done host is safe, and skipping whole hosts-phases
// is what saves time (the founder is not rebuilt). Facts recorded by plans are kept so later phases of a
// resumed run still see them. Written atomically after every completion.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface JournalData {
  runId: string;
  startedAt: string;
  finished: boolean;
  /** phase → host → the facts its steps recorded. */
  completed: Record<string, Record<string, Record<string, unknown>>>;
}

export class Journal {
  private data: JournalData;
  private readonly file: string;
  /** The previous run's completions, honoured only with --resume. */
  private readonly resumeFrom?: JournalData;

  constructor(stateDir: string, runId: string, opts: { resume: boolean; now: Date }) {
    this.file = join(stateDir, 'journal.json');
    const previous = Journal.read(this.file);
    if (opts.resume && previous && !previous.finished) this.resumeFrom = previous;
    this.data = { runId, startedAt: opts.now.toISOString(), finished: false, completed: structuredClone(this.resumeFrom?.completed ?? {}) };
  }

  static read(file: string): JournalData | undefined {
    if (!existsSync(file)) return undefined;
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as JournalData;
    } catch {
      return undefined; // a corrupt journal only costs a resume: the run redoes idempotent steps
    }
  }

  /** Whether --resume found an unfinished run to continue. */
  get resuming(): boolean {
    return this.resumeFrom !== undefined;
  }

  /** The facts of (phase, host) when the resumed run completed it, else undefined. */
  completedFacts(phase: string, host: string): Record<string, unknown> | undefined {
    return this.resumeFrom?.completed[phase]?.[host];
  }

  complete(phase: string, host: string, facts: Record<string, unknown>): void {
    (this.data.completed[phase] ??= {})[host] = facts;
    this.save();
  }

  finish(): void {
    this.data.finished = true;
    this.save();
  }

  /** Persist without finishing (a stop or an interrupt: --resume continues from here). */
  save(): void {
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.data, null, 2), { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}
