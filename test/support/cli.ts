// Runs the CLI in-process with captured output (fast), or as the real executable (what operators run).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../../cli/main.ts';
import { type Io } from '../../cli/io.ts';

export async function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l), isTTY: false, env: { ...process.env, ...env } };
  const code = await main(argv, io);
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export function cliProcess(argv: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 600_000) {
  const res = spawnSync('npx', ['bootstrap', ...argv], { cwd: repoRoot, env: { ...process.env, ...env }, encoding: 'utf8', timeout: timeoutMs });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}
