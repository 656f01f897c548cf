// Running read-only probes on a host: every batch of probes (src/engine/probe-batch.ts frames them) goes
// through probeBatch, the one runner. The engine's steps and preflights run theirs with runProbes, which
// stops the run when a batch does not answer; verify reads the cluster through probeBatch and judges a
// missing answer itself.
import { CauseError } from '../errors.ts';
import { connectionLost } from '../transport/lost.ts';
import { sudoRefusal } from '../transport/sudo.ts';
import type { ExecResult, LoggedCommand } from '../transport/types.ts';
import type { RunContext } from './context.ts';
import type { HostRef, ProbeCommand, ProbeResult, ProbeResults } from './phase.ts';
import { batchMarker, batchScript, parseBatch } from './probe-batch.ts';

/** One probe batch's budget (a host's read-only probes, run as one remote execution). */
export const PROBE_BUDGET_MS = 60_000;

/**
 * Runs `batch` on `host` as ONE remote execution (`sh -s`, through sudo when `sudo`) within `timeoutMs`,
 * and returns the execution's result with each probe's answer (a probe the batch did not reach: code null).
 * A probe that reads the API (ProbeCommand.api) is asked there when the run can (RunContext.apiGet), beside
 * the execution; one the API did not answer joins a second execution. The run log shows each probe as its
 * own command with its exit code and output, never the frames. Rejects when the host cannot be reached at
 * all (as `exec` does).
 */
export async function probeBatch(
  host: HostRef,
  ctx: RunContext,
  batch: Record<string, ProbeCommand>,
  o: { sudo: boolean; timeoutMs: number; concurrent?: boolean },
): Promise<{ res: ExecResult; results: ProbeResults }> {
  const apiGet = ctx.apiGet;
  // A secret probe stays on the host: the batch's log keeps its output out of the run log, a GET's would not.
  const viaApi = apiGet ? Object.keys(batch).filter((k) => batch[k].api !== undefined && !batch[k].secret) : [];
  if (!viaApi.length) return execBatch(host, ctx, batch, o);
  const rest = Object.fromEntries(Object.entries(batch).filter(([k]) => !viaApi.includes(k)));
  const [onHost, fromApi] = await Promise.all([
    Object.keys(rest).length ? execBatch(host, ctx, rest, o) : undefined,
    Promise.all(viaApi.map(async (k) => [k, await apiGet!(host, batch[k].api!, { timeoutMs: o.timeoutMs, label: k }).catch(() => undefined)] as const)),
  ]);
  const missed = fromApi.filter(([, r]) => !r).map(([k]) => k);
  const again = missed.length ? await execBatch(host, ctx, Object.fromEntries(missed.map((k) => [k, batch[k]])), o) : undefined;
  const answered: ProbeResults = Object.fromEntries(fromApi.flatMap(([k, r]) => (r ? [[k, r]] : [])));
  // The executions' result (the first that did not end well); none ran: the API answered every probe.
  const ran = [onHost, again].filter((b) => b !== undefined);
  const res = ran.find((b) => b.res.code !== 0)?.res ?? ran[0]?.res ?? { command: 'sh -s', stdout: '', stderr: '', code: 0, durationMs: 0 };
  return { res, results: Object.assign(answered, ...ran.map((b) => b.results)) };
}

/** The probes `keys` of `batch` in words: each one's first line (80 characters at most), ` | ` between them. */
function probeLines(batch: Record<string, ProbeCommand>, keys: string[]): string {
  return keys.map((k) => batch[k].command.split('\n')[0].slice(0, 80)).join(' | ');
}

/** probeBatch's one remote execution. */
async function execBatch(
  host: HostRef,
  ctx: RunContext,
  batch: Record<string, ProbeCommand>,
  o: { sudo: boolean; timeoutMs: number; concurrent?: boolean },
): Promise<{ res: ExecResult; results: ProbeResults }> {
  const keys = Object.keys(batch);
  const marker = batchMarker();
  const res = await ctx.remote(host).exec('sh -s', {
    readOnly: true,
    sudo: o.sudo,
    what: `${o.sudo ? 'sudo ' : ''}sh -s (${keys.length} read-only probe${keys.length === 1 ? '' : 's'}: ${probeLines(batch, keys)})`,
    stdin: batchScript(batch, marker, { concurrent: o.concurrent }),
    timeoutMs: o.timeoutMs,
    signal: ctx.signal,
    logAs: (r: ExecResult) => batchLogEntries(batch, parseBatch(r.stdout, keys, marker), o.sudo, r),
  });
  return { res, results: parseBatch(res.stdout, keys, marker) };
}

/**
 * A step's or a preflight's probes: read-only commands in at most two remote executions (one as the user,
 * one through sudo). A batch that does not answer stops the run with a named cause. What the run already
 * asked and nothing since can have changed (src/engine/probe-memo.ts) is not asked again: an answer at hand
 * is taken, one still on its way waited for (and asked here after all when it does not come).
 */
export async function runProbes(host: HostRef, ctx: RunContext, commands: [string, ProbeCommand][], o: { timeoutMs?: number } = {}): Promise<ProbeResults> {
  const memo = ctx.probeMemo;
  if (!memo) return askProbes(host, ctx, commands, o);
  const now: [string, ProbeCommand][] = [];
  const waiting: [string, ProbeCommand, Promise<ProbeResult | undefined>][] = [];
  for (const [key, cmd] of commands) {
    const seen = memo.find(host, cmd);
    if (seen === undefined) now.push([key, cmd]);
    else waiting.push([key, cmd, Promise.resolve(seen)]);
  }
  // Sent before anything is awaited, so that a phase asking the same a moment later waits for these answers.
  const asked = askProbes(host, ctx, now, o);
  // Its failure is thrown below, once the answers waited for are in; until then it must not count as unhandled.
  asked.catch(() => undefined);
  const waited = await Promise.all(waiting.map(async ([key, cmd, answer]) => [key, cmd, await answer] as const));
  const missed = waited.filter(([, , answer]) => !answer).map(([key, cmd]): [string, ProbeCommand] => [key, cmd]);
  const known: ProbeResults = Object.fromEntries(waited.flatMap(([key, , answer]) => (answer ? [[key, answer]] : [])));
  const [first, again] = await Promise.all([asked, askProbes(host, ctx, missed, o)]);
  return { ...known, ...first, ...again };
}

/** runProbes without looking in the memo; what it asks is announced to it and its answers kept. */
async function askProbes(host: HostRef, ctx: RunContext, commands: [string, ProbeCommand][], o: { timeoutMs?: number }): Promise<ProbeResults> {
  const memo = ctx.probeMemo;
  const plain: Record<string, ProbeCommand> = {};
  const root: Record<string, ProbeCommand> = {};
  for (const [key, cmd] of commands) (cmd.sudo ? root : plain)[key] = cmd;
  // The two batches run at once on the one connection (two channels): probes are read-only.
  const parts = await Promise.all(
    (
      [
        [plain, false],
        [root, true],
      ] as const
    ).map(async ([batch, sudo]) => {
      const keys = Object.keys(batch);
      if (!keys.length) return {};
      const sentMs = ctx.clock.now();
      const mark = memo?.mark() ?? 0;
      const sent = probeBatch(host, ctx, batch, { sudo, timeoutMs: o.timeoutMs ?? PROBE_BUDGET_MS });
      // Another phase's probe that asks the same meanwhile waits for this answer instead of asking again.
      if (memo)
        for (const k of keys)
          memo.asking(
            host,
            batch[k],
            sent.then((b) => (b.res.code === 0 ? b.results[k] : undefined)).catch(() => undefined),
          );
      const { res, results } = await sent;
      ctx.signal.throwIfAborted();
      if (res.lost) throw connectionLost(host.name, `sh -s (${keys.length} read-only probes${sudo ? ', sudo' : ''})`);
      // sudo's own refusal (a password wanted, sudo not installed) names itself: passwordless sudo withdrawn
      // after the run's sudo check (its lock, or the connection's check).
      const refused = sudo ? sudoRefusal(host.name, `sudo -n sh -s (${keys.length} read-only probes)`, res) : undefined;
      if (refused) throw refused;
      if (res.code !== 0) {
        // Say in words which probes answered and which did not, and show the batch's own error output
        // (each probe's output stays in the run log, redacted).
        const missing = keys.filter((k) => results[k].code === null);
        const seen = `${keys.length - missing.length} of ${keys.length} probes answered${missing.length ? `; no answer from: ${probeLines(batch, missing)}` : ''}`;
        throw new CauseError('PROBE_FAILED', {
          host: host.name,
          evidence: { command: `sh -s (${keys.length} read-only probes${sudo ? ', sudo' : ''})`, exitCode: res.code, seen, excerpt: res.stderr.slice(-2000) },
        });
      }
      const window = { sentMs, answeredMs: ctx.clock.now() };
      for (const k of keys) {
        results[k].window = window;
        memo?.keep(mark, host, batch[k], results[k]);
      }
      return results;
    }),
  );
  const results: ProbeResults = Object.assign({}, ...parts);
  return results;
}

/** The run log's view of a probe batch: each probe as its own command, output decoded. */
function batchLogEntries(
  batch: Record<string, ProbeCommand>,
  results: ProbeResults,
  sudo: boolean,
  whole: { code: number | null; stderr: string },
): LoggedCommand[] {
  const entries: LoggedCommand[] = Object.entries(batch).map(([key, cmd]) => ({
    command: `${sudo ? 'sudo ' : ''}${cmd.command}   # probe ${key}`,
    code: results[key].code,
    // A secret probe's output (a token, a kubeconfig) is never logged, as a secret command's is not.
    stdout: cmd.secret ? '(secret output: not logged)' : results[key].stdout,
    stderr: cmd.secret ? '' : results[key].stderr,
  }));
  if (whole.code !== 0) entries.push({ command: `sh -s (the probe batch${sudo ? ', sudo' : ''})`, code: whole.code, stdout: '', stderr: whole.stderr });
  return entries;
}
