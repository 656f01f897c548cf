// Copying a snapshot from a server to the backup folder: `sudo cat` on one exec channel, its output
// streamed into the snapshot's file (hashed on the way), checked against the server's own size and
// sha256. Nothing holds the snapshot in memory: a 1 GiB snapshot costs the stream's buffers, not 1 GiB
// (a string of it would pass V8's limit at a few hundred MB).
import { finished } from 'node:stream/promises';
import { countBytes, type UploadProgress } from '../engine/apply.ts';
import { uploadBudgetMs as transferBudgetMs } from '../engine/upload-budget.ts';
import { CauseError } from '../errors.ts';
import { connectionLost } from '../transport/lost.ts';
import type { ExecResult, Remote } from '../transport/types.ts';
import { shq } from '../util/shell.ts';
import type { SnapshotSink } from './store.ts';
import { lastLines } from '../util/text.ts';

export interface PulledSnapshot {
  sha256: string;
  bytes: number;
}

/** BACKUP_FAILED on `host`: the command, what it printed (never the snapshot itself) and what was seen. */
export function backupFailed(host: string, command: string, res: Pick<ExecResult, 'code' | 'stderr' | 'stdout'>, seen: string): CauseError {
  return new CauseError('BACKUP_FAILED', { host, evidence: { command, exitCode: res.code, seen, excerpt: lastLines((res.stderr || res.stdout).trim(), 15) } });
}

/** The commands pullSnapshot runs (through sudo), in order: what a plan lists for it. */
export function pullCommands(path: string): string[] {
  const p = shq(path);
  return [`stat -c %s ${p}`, `sha256sum ${p}`, `cat ${p}   (streamed into the backup folder; secret: never logged)`];
}

/**
 * Copy the root-only file `path` into `sink`. The budget grows with the size (the uploads' rate, apply.ts);
 * `onProgress` hears each tenth of a large copy. Throws BACKUP_FAILED when the copy fails or does not
 * match; the sink is then destroyed and the caller abandons the file.
 */
export async function pullSnapshot(
  remote: Remote,
  path: string,
  sink: SnapshotSink,
  opts: { signal?: AbortSignal; onProgress?: (p: UploadProgress) => void } = {},
): Promise<PulledSnapshot> {
  const p = shq(path);
  let copied = false;
  try {
    const size = await remote.exec(`stat -c %s ${p}`, { sudo: true, timeoutMs: 30_000, signal: opts.signal });
    const bytes = Number(size.stdout.trim());
    if (size.code !== 0 || !Number.isSafeInteger(bytes)) throw backupFailed(remote.host, `stat -c %s ${path}`, size, 'the snapshot is not there to copy');
    const budgetMs = transferBudgetMs(bytes);
    const sum = await remote.exec(`sha256sum ${p}`, { sudo: true, timeoutMs: budgetMs, signal: opts.signal });
    const serverSha = sum.stdout.trim().split(/\s+/)[0];
    if (sum.code !== 0 || !/^[0-9a-f]{64}$/.test(serverSha))
      throw backupFailed(remote.host, `sha256sum ${path}`, sum, "the server's sha256 of the snapshot could not be read");

    const counter = countBytes(bytes, (done, percent) => opts.onProgress?.({ direction: 'download', path, bytes: done, totalBytes: bytes, percent, budgetMs }));
    counter.pipe(sink);
    // A file that cannot be written (disk full) stops the copy at once, not at its budget.
    sink.once('error', (err) => counter.destroy(err));
    // secret: the snapshot holds every Secret of the cluster; the run log records the command redacted.
    const copy = await remote.exec(`cat ${p}`, { sudo: true, secret: true, stdoutTo: counter, timeoutMs: budgetMs, signal: opts.signal });
    // After a clean exit the stream was ended: wait for the file to be synced and closed. (A stopped copy
    // leaves it open; the finally below destroys it.)
    const writeError =
      sink.errored ??
      (copy.code === 0
        ? await finished(sink).then(
            () => undefined,
            (err: Error) => err,
          )
        : undefined);
    opts.signal?.throwIfAborted(); // Ctrl-C: the engine's own stop, not a failed copy
    if (writeError) throw backupFailed(remote.host, `cat ${path} > ${sink.path}`, copy, `the backup file could not be written: ${writeError.message}`);
    if (copy.lost) throw connectionLost(remote.host, `cat ${path}`);
    if (copy.code !== 0) {
      const seen = copy.code === null ? `the copy did not finish within its budget of ${Math.round(budgetMs / 1000)} s` : 'the snapshot could not be read back';
      throw backupFailed(remote.host, `cat ${path}`, copy, seen);
    }
    if (sink.bytes !== bytes || sink.sha256 !== serverSha) {
      throw backupFailed(
        remote.host,
        `sha256sum ${path}`,
        sum,
        `the copy (${sink.bytes} bytes, sha256 ${sink.sha256}) is not the server's (${bytes} bytes, sha256 ${serverSha})`,
      );
    }
    copied = true;
    return { sha256: serverSha, bytes };
  } finally {
    if (!copied) sink.destroy();
  }
}
