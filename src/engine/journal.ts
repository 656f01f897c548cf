// The journal of a run, kept per environment on the operator's machine, so that `--resume` continues
// after the last completed (phase, host) of an interrupted run. Granularity is a phase on a host: every
// step is idempotent, so redoing the steps of a half-done host is safe, and skipping whole hosts-phases
// is what saves time (the founder is not rebuilt). Facts recorded by plans are kept so later phases of a
// resumed run still see them. Written atomically (and flushed to disk) after every completion.
import { existsSync, mkdirSync } from 'node:fs';
import { CauseError } from '../errors.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { readRegularText } from '../util/regular-file.ts';
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
  private unsaved = false;
  private readonly file: string;
  /** The previous run's completions, honoured only with --resume. */
  private readonly resumeFrom?: JournalData;

  constructor(stateDir: string, runId: string, opts: { resume: boolean; now: Date }) {
    this.file = join(stateDir, 'journal.json');
    // Only --resume reads the previous run: without it a torn journal is simply replaced.
    const previous = opts.resume ? Journal.read(this.file) : undefined;
    if (opts.resume && previous && !previous.finished) this.resumeFrom = previous;
    this.data = { runId, startedAt: opts.now.toISOString(), finished: false, completed: structuredClone(this.resumeFrom?.completed ?? {}) };
  }

  static read(file: string): JournalData | undefined {
    if (!existsSync(file)) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(readRegularText(file));
    } catch (err) {
      return corrupt(file, (err as Error).message);
    }
    const d = data as JournalData;
    if (typeof d?.runId !== 'string' || typeof d.finished !== 'boolean' || typeof d.completed !== 'object' || d.completed === null) {
      return corrupt(file, 'it is JSON, but not a journal (runId, finished, completed)');
    }
    return d;
  }

  /** Whether --resume found an unfinished run to continue. */
  get resuming(): boolean {
    return this.resumeFrom !== undefined;
  }

  /** The facts of (phase, host) when the resumed run completed it, else undefined. */
  completedFacts(phase: string, host: string): Record<string, unknown> | undefined {
    return this.resumeFrom?.completed[phase]?.[host];
  }

  /**
   * Records (phase, host) as complete; written at the phase's end (checkpoint), or by the save of a run that
   * stops. A run killed outright loses the hosts of the phase it was in: --resume runs that phase on them
   * again, which changes nothing where it had finished (every step probes first). One write per phase, not
   * per host: each write is flushed to disk, about 10 ms on a small machine, 30 of them in a converged run.
   */
  complete(phase: string, host: string, facts: Record<string, unknown>): void {
    (this.data.completed[phase] ??= {})[host] = facts;
    this.unsaved = true;
  }

  /** Writes the completions recorded since the last write, if any. */
  checkpoint(): void {
    if (this.unsaved) this.save();
  }

  finish(): void {
    this.data.finished = true;
    this.save();
  }

  /** Persist without finishing (a stop or an interrupt: --resume continues from here). */
  save(): void {
    this.unsaved = false;
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    writeFileAtomic(this.file, JSON.stringify(this.data, null, 2));
  }
}

/** A torn or foreign journal stops a --resume with the file named, instead of resuming from nothing. */
function corrupt(file: string, why: string): never {
  throw new CauseError('STATE_FILE_CORRUPT', {
    evidence: { seen: `${file} cannot be read: ${why}`, command: `rm ${file}   # then the run redoes every phase (each step is idempotent)` },
  });
}
