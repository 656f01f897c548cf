// Applying a plan: each change goes through here, so what check mode shows is exactly what runs. The run
// loop (run.ts) calls applyPlan outside check mode only; nothing else performs a change.
import { createReadStream, mkdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, relative, isAbsolute } from 'node:path';
import { Transform } from 'node:stream';
import { CauseError, CauseErrors } from '../errors.ts';
import { connectionLost } from '../transport/lost.ts';
import type { ExecResult, Remote } from '../transport/types.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { shq } from '../util/shell.ts';
import type { ActionChange, Change, CommandChange, LocalChange, RemoteChange } from './changes.ts';
import type { RunContext } from './context.ts';
import type { HostRef } from './host-ref.ts';
import { checkedUpload, COPY_MISMATCH_EXIT } from './sum-stamps.ts';
import { UPLOAD_BYTES_PER_SECOND, UPLOAD_FLOOR_MS, uploadBudgetMs } from './upload-budget.ts';
import { lastLines } from '../util/text.ts';

const DEFAULT_COMMAND_BUDGET_MS = 120_000;

/** Uploads at least this large report their progress, once per tenth of their bytes; smaller ones take seconds. */
export const PROGRESS_MIN_BYTES = 16 * 1024 * 1024;

/** How far a transfer has got: one report per tenth of its bytes (no clock in it, so logs compare). */
export interface UploadProgress {
  direction: 'upload' | 'download';
  /** The file on the host. */
  path: string;
  bytes: number;
  totalBytes: number;
  percent: number;
  budgetMs: number;
}

/**
 * Performs a plan's changes in order, each where it says: a host's change on that host's connection (`on`,
 * else the step's host), a local write in the state folder, an action with its budget.
 */
export async function applyPlan(changes: Change[], host: HostRef, ctx: RunContext, at: { phase: string; step: string }): Promise<void> {
  const progress = (p: UploadProgress) => ctx.emit({ type: 'transfer', ...at, host: host.name, ...p });
  for (const change of changes) {
    ctx.signal.throwIfAborted();
    if (change.kind === 'local') writeLocal(change, ctx.stateDir);
    else if (change.kind === 'action') await runAction(change, change.on ? hostNamed(ctx, change.on) : host, ctx, at);
    else {
      try {
        await applyChange(ctx.remote(change.kind === 'command' && change.on ? hostNamed(ctx, change.on) : host), change, ctx.signal, progress);
      } catch (err) {
        // Ctrl-C cancels the command under way, which then ends as if its budget ran out: the run's own stop
        // is the cause, not the change (an upload cut off at the first press is no APPLY_FAILED).
        ctx.signal.throwIfAborted();
        throw err;
      }
    }
  }
}

/** The inventory's host of that name (a change's `on`); an unknown name is a bug of the plan. */
function hostNamed(ctx: Pick<RunContext, 'topology'>, name: string): HostRef {
  // The run's topology, not the inventory's roles: a replace may have moved the founder role.
  const host = [...ctx.topology.servers, ...ctx.topology.agents].find((h) => h.name === name);
  if (!host) throw new Error(`a change runs on ${name}, which is no host of the inventory`);
  return host;
}

/** A local change, whole or not at all, inside the state folder only; a secret is 0600 whatever the plan says. */
function writeLocal(change: LocalChange, stateDir: string): void {
  const rel = relative(stateDir, change.path);
  if (!isAbsolute(change.path) || rel.startsWith('..') || isAbsolute(rel))
    throw new Error(`a local change writes ${change.path}, outside the state folder ${stateDir}`);
  mkdirSync(dirname(change.path), { recursive: true, mode: 0o700 });
  writeFileAtomic(change.path, change.content, change.secret ? 0o600 : parseInt(change.mode, 8));
}

/** How long an action that ignores its budget's signal may still run before the engine stops waiting for it. */
const ACTION_GRACE_MS = 1_000;

/**
 * An action, given a signal that fires at its budget (or on Ctrl-C); one that ignores it ends at budget +
 * grace. One with a budget is a bounded wait: the operator sees it start, with its budget, and end.
 */
async function runAction(change: ActionChange, host: HostRef, ctx: RunContext, at: { phase: string; step: string }): Promise<void> {
  if (change.budgetMs === undefined) return change.run({ ...ctx, host });
  const base = { ...at, host: host.name, description: change.description };
  ctx.emit({ type: 'action-start', ...base, budgetMs: change.budgetMs });
  const t0 = ctx.clock.now();
  const budget = new AbortController();
  const overran = () =>
    applyFailed(host.name, change.description, null, '', `the action did not end within its budget of ${Math.round(change.budgetMs! / 1000)} s`);
  const onAbort = () => budget.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      change.run({ ...ctx, host, signal: budget.signal }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          budget.abort(new Error('budget'));
          setTimeout(() => reject(overran()), ACTION_GRACE_MS).unref();
        }, change.budgetMs);
      }),
    ]);
    ctx.emit({ type: 'action-end', ...base, status: 'ok', durationMs: ctx.clock.now() - t0 });
  } catch (err) {
    ctx.signal.throwIfAborted(); // Ctrl-C: the run's own stop
    ctx.emit({ type: 'action-end', ...base, status: 'failed', durationMs: ctx.clock.now() - t0 });
    // Stopped by its budget without naming a cause of its own: the budget is the cause.
    if (budget.signal.aborted && !(err instanceof CauseError) && !(err instanceof CauseErrors)) throw overran();
    throw err;
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}

/** A failed command's cause: its failsAs, else APPLY_FAILED. */
function commandFailed(host: string, change: CommandChange, res: ExecResult): CauseError {
  const shown = change.secret ? '(command holding a secret)' : change.command;
  const output = res.stderr || res.stdout;
  if (typeof change.failsAs === 'string') {
    return new CauseError(change.failsAs, {
      host,
      evidence: {
        command: shown,
        exitCode: res.code,
        seen: lastLines(output, 1) || (res.code === null ? 'the command did not finish within its budget' : `exit ${res.code}`),
        excerpt: lastLines(output, 20),
      },
    });
  }
  return change.failsAs?.(res, host) ?? applyFailed(host, shown, res.code, output);
}

export async function applyChange(remote: Remote, change: RemoteChange, signal?: AbortSignal, onProgress?: (p: UploadProgress) => void): Promise<void> {
  if (change.kind === 'file' || change.kind === 'upload') {
    const p = shq(change.path);
    const owner = change.kind === 'file' ? change.owner : undefined;
    const secret = change.kind === 'file' ? change.secret : false;
    const tmp = shq(`${change.path}.bootstrap-tmp`);
    // Write to a temp file and rename: a host never holds a half-written file. umask 077 first so a
    // secret is never readable by others, even for the moment before chmod.
    // An upload is checked against the sha256 sent before it takes the file's place, and stamped after
    // (src/engine/sum-stamps.ts: later runs read the stamp instead of hashing the file again).
    const checked = change.kind === 'upload' ? checkedUpload(`${change.path}.bootstrap-tmp`, change.path, change.sha256) : undefined;
    const script = [
      'umask 077',
      `mkdir -p "$(dirname ${p})"`,
      `cat > ${tmp}`,
      checked?.check ?? '',
      `chmod ${change.mode} ${tmp}`,
      owner ? `chown ${shq(owner)} ${tmp}` : '',
      `mv -f ${tmp} ${p}`,
      checked?.stamp ?? '',
    ]
      .filter(Boolean)
      .join(' && ');
    const command = `sh -c ${shq(script)}`;
    if (change.kind === 'file') {
      const res = await remote.exec(command, { sudo: true, stdin: change.content, secret, timeoutMs: DEFAULT_COMMAND_BUDGET_MS, signal });
      throwIfLost(remote, res, `write ${change.path}`);
      if (res.code !== 0) throw applyFailed(remote.host, `write ${change.path}`, res.code, res.stderr);
      return;
    }
    // An upload is streamed from the file (a tarball or a snapshot is never held in memory whole).
    const totalBytes = (await stat(change.localPath)).size;
    const budgetMs = uploadBudgetMs(totalBytes);
    const file = createReadStream(change.localPath);
    const counted = countBytes(totalBytes, (bytes, percent) => onProgress?.({ direction: 'upload', path: change.path, bytes, totalBytes, percent, budgetMs }));
    file.once('error', (err) => counted.destroy(err));
    try {
      const res = await remote.exec(command, { sudo: true, stdin: file.pipe(counted), timeoutMs: budgetMs, signal });
      throwIfLost(remote, res, `upload ${change.localPath} → ${change.path}`);
      if (res.code !== 0) {
        const seen =
          res.code === null
            ? `the upload did not finish within its budget of ${Math.round(budgetMs / 1000)} s (${totalBytes} bytes at ${UPLOAD_BYTES_PER_SECOND / 1024 / 1024} MiB/s plus ${UPLOAD_FLOOR_MS / 1000} s)`
            : res.code === COPY_MISMATCH_EXIT
              ? lastLines(res.stderr, 1)
              : undefined;
        throw applyFailed(remote.host, `upload ${change.localPath} → ${change.path}`, res.code, res.stderr, seen);
      }
    } finally {
      file.destroy();
      counted.destroy();
    }
    return;
  }
  const res = await remote.exec(change.command, {
    sudo: change.sudo,
    stdin: change.stdin,
    secret: change.secret,
    timeoutMs: change.timeoutMs ?? DEFAULT_COMMAND_BUDGET_MS,
    signal,
  });
  throwIfLost(remote, res, change.secret ? '(command holding a secret)' : change.command);
  if (res.code !== 0) throw commandFailed(remote.host, change, res);
}

/** A change whose connection was lost is the host's absence (SSH_UNREACHABLE), not the change's failure. */
function throwIfLost(remote: Remote, res: ExecResult, what: string): void {
  if (res.lost) throw connectionLost(remote.host, what);
}

/** A pass-through that reports each tenth of `total` bytes as it goes by (uploads of PROGRESS_MIN_BYTES and more). */
export function countBytes(total: number, report: (bytes: number, percent: number) => void): Transform {
  let bytes = 0;
  let tenth = 1;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (total >= PROGRESS_MIN_BYTES) {
        // The tenth's own byte count, not the count at the chunk that crossed it: chunk sizes vary
        // (SSH packets), the report must not.
        while (tenth <= 10 && bytes * 10 >= total * tenth) {
          report(Math.floor((total * tenth) / 10), tenth * 10);
          tenth++;
        }
      }
      done(null, chunk);
    },
  });
}

/** APPLY_FAILED for a command (or a request) that failed on `host`: its exit, the tail of what it said. */
export function applyFailed(host: string, command: string, code: number | null, output: string, seen?: string): CauseError {
  return new CauseError('APPLY_FAILED', {
    host,
    evidence: {
      command,
      exitCode: code,
      excerpt: lastLines(output, 20),
      seen: seen ?? (code === null ? 'the command did not finish within its budget' : `exit ${code}`),
    },
  });
}
