// What the run log gets for one remote execution, for every transport: the command as it ran (or, for a
// probe batch, each probe as its own command through `logAs`), its exit code, duration and output, marked
// secret when it holds one. A command that never started is recorded too, so a log shows every attempt.
import type { CommandLog, ExecOptions, ExecResult } from './types.ts';

export function recordExec(log: CommandLog | undefined, host: string, result: ExecResult, opts: Pick<ExecOptions, 'logAs' | 'secret'>): void {
  if (!log) return;
  const entries = opts.logAs && !opts.secret ? opts.logAs(result) : [result];
  for (const e of entries) {
    log.record({
      host,
      command: e.command,
      code: e.code,
      durationMs: result.durationMs,
      stdout: e.stdout,
      stderr: e.stderr,
      secret: opts.secret,
      ...(result.lost && { lost: true as const }),
    });
  }
}

/** A command the connection closed under before it could start (the caller stops with SSH_UNREACHABLE). */
export function recordNotStarted(log: CommandLog | undefined, host: string, command: string, secret?: boolean): void {
  log?.record({ host, command, code: null, durationMs: 0, stdout: '', stderr: '', secret, notStarted: true });
}
