// The one way the engine starts a process on the operator's machine (the k3s binary for its version,
// `zstd` for an image archive): bounded in time and output, never through a shell, and injectable where a
// caller takes its dependencies (phases/node-baseline/k3s-version.ts VersionDeps).
import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

export interface LocalResult {
  /** The exit status; null when it did not start, was killed at its budget, or died by a signal. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `path args` to its end within `timeoutMs`, its output capped at 1 MiB. Never rejects. */
export function runLocal(path: string, args: string[], timeoutMs: number): Promise<LocalResult> {
  return new Promise((resolve) => {
    execFile(path, args, { timeout: timeoutMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const status = (err as { code?: unknown } | null)?.code;
      const code = err ? (typeof status === 'number' ? status : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr || (err && code === null ? err.message : '')) });
    });
  });
}

/** Starts `path args` with its standard output as a stream (a decompressor feeding a reader). */
export function streamLocal(path: string, args: string[]): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
}
