// Applying a plan: each change goes through here, so what check mode shows is exactly what runs.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { CauseError } from '../errors.ts';
import { connectionLost } from '../transport/lost.ts';
import type { ExecResult, Remote } from '../transport/types.ts';
import { shq } from '../util/shell.ts';
import type { Change } from './changes.ts';
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

export async function applyChange(remote: Remote, change: Change, signal?: AbortSignal, onProgress?: (p: UploadProgress) => void): Promise<void> {
  if (change.kind === 'file' || change.kind === 'upload') {
    const p = shq(change.path);
    const owner = change.kind === 'file' ? change.owner : undefined;
    const secret = change.kind === 'file' ? change.secret : false;
    const tmp = shq(`${change.path}.bootstrap-tmp`);
    // Write to a temp file and rename: a host never holds a half-written file. umask 077 first so a
    // secret is never readable by others, even for the moment before chmod.
    const script = [
      'umask 077',
      `mkdir -p "$(dirname ${p})"`,
      `cat > ${tmp}`,
      `chmod ${change.mode} ${tmp}`,
      owner ? `chown ${shq(owner)} ${tmp}` : '',
      `mv -f ${tmp} ${p}`,
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
        const seen = res.code === null ? `the upload did not finish within its budget of ${Math.round(budgetMs / 1000)} s (${totalBytes} bytes at ${UPLOAD_BYTES_PER_SECOND / 1024 / 1024} MiB/s plus ${UPLOAD_FLOOR_MS / 1000} s)` : undefined;
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
  const shown = change.secret ? '(command holding a secret)' : change.command;
  throwIfLost(remote, res, shown);
  if (res.code !== 0) throw applyFailed(remote.host, shown, res.code, res.stderr || res.stdout);
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

function applyFailed(host: string, command: string, code: number | null, output: string, seen?: string): CauseError {
  return new CauseError('APPLY_FAILED', {
    host,
    evidence: { command, exitCode: code, excerpt: lastLines(output, 20), seen: seen ?? (code === null ? 'the command did not finish within its budget' : `exit ${code}`) },
  });
}

