// What the engine tells the world. Renderers (src/view/) subscribe; phases never print.
import type { CauseError } from '../errors.ts';

type StepStatus = 'ok' | 'changed' | 'would-change' | 'skipped';

interface ChangeView {
  summary: string;
  detail: string;
}

export type EngineEvent =
  | { type: 'run-start'; env: string; check: boolean; phases: string[]; waivers: { cause: string; reason: string }[] }
  | { type: 'phase-start'; phase: string; title: string; hosts: string[] }
  | { type: 'step-start'; phase: string; step: string; title: string; host: string }
  | { type: 'step-end'; phase: string; step: string; title: string; host: string; status: StepStatus; changes: ChangeView[]; durationMs: number }
  | { type: 'gate-start'; phase: string; gate: string; title: string; host: string; budgetMs: number }
  | { type: 'gate-end'; phase: string; gate: string; title: string; host: string; status: 'ok' | 'would-wait' | 'failed'; durationMs: number }
  /** An action with a budget (a bounded wait that changes something, e.g. the failover drill) starts and ends. */
  | { type: 'action-start'; phase: string; step: string; host: string; description: string; budgetMs: number }
  | { type: 'action-end'; phase: string; step: string; host: string; description: string; status: 'ok' | 'failed'; durationMs: number }
  | { type: 'waived'; phase: string; host: string; cause: string; reason: string }
  /** One row of a read-only check's table (verify): what a check saw on one host. */
  | { type: 'check'; phase: string; check: string; title: string; host: string; ok: boolean; detail: string }
  /**
   * A long transfer under way (an upload, or a backup's snapshot, of 16 MiB and more): one event per tenth
   * of its bytes, no clock in it, so plain and JSON output stay the same from run to run. `path` is the
   * file on the host; `budgetMs` the transfer's own budget.
   */
  | {
      type: 'transfer';
      phase: string;
      step: string;
      host: string;
      direction: 'upload' | 'download';
      path: string;
      bytes: number;
      totalBytes: number;
      percent: number;
      budgetMs: number;
    }
  /** One remote command as the run log shows it (redacted; a secret command's output withheld): --json carries the run log. */
  | ({ type: 'command' } & CommandShown)
  | { type: 'warning'; message: string; host?: string }
  | { type: 'phase-end'; phase: string; durationMs: number; status: 'done' | 'stopped' }
  | { type: 'stopped'; error: ReturnType<CauseError['toJSON']> }
  | { type: 'run-end'; summary: RunSummary; logFile?: string; reportFile?: string };

export interface CommandShown {
  host: string;
  command: string;
  /** null: it did not exit on its own (its budget, Ctrl-C, the connection lost or never there to start it). */
  exitCode: number | null;
  durationMs: number;
  stdout: string;
  stderr: string;
  /** Why there is no exit code, when the transport knows. */
  ended?: 'connection lost' | 'not started: the connection closed before it';
  /** The command holds a secret: its output is not shown. */
  withheld?: true;
}

export interface RunSummary {
  ok: number;
  changed: number;
  wouldChange: number;
  stopped: number;
  durationMs: number;
  check: boolean;
  phaseDurations: Record<string, number>;
}

export type Emit = (event: EngineEvent) => void;

/** "12 ok, 0 changed" (apply) or "12 ok, 3 would change" (check). */
export function summaryLine(s: RunSummary): string {
  const main = s.check ? `${s.ok} ok, ${s.wouldChange} would change` : `${s.ok} ok, ${s.changed} changed`;
  return s.stopped ? `${main}, stopped` : main;
}
