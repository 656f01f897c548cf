// Runs a local command and collects its output. Every side effect of the lab on the machine goes
// through here or through node:fs, so a failure always says which command failed and why.
import { spawn } from 'node:child_process';
import { LabCommandFailed } from './errors.ts';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  /** Return the result instead of throwing when the command exits non-zero. */
  allowFail?: boolean;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeoutMs) timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      const res = { code, stdout, stderr };
      if (code !== 0 && !opts.allowFail) reject(new LabCommandFailed([cmd, ...args].join(' '), code, stderr, stdout));
      else resolve(res);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it returns true or `timeoutMs` passes; returns whether it succeeded. */
export async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, everyMs = 200): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return true;
    if (Date.now() > end) return false;
    await sleep(everyMs);
  }
}
