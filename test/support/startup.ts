// The startup figure of issue 17 (`bootstrap --help` in 0.3 s at most), shared by its unit test and the bench:
// the bundle built as `npm ci` builds it (the `prepare` script), into a folder of its own, and bin/bootstrap.js
// timed running it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './cli.ts';

export const STARTUP_TARGET_MS = 300;

/** Runs the `prepare` script into a temporary folder; `dir` is the bundle's folder (BOOTSTRAP_BUNDLE_DIR). */
export function buildBundle(): { dir: string; output: string; remove: () => void } {
  const tmp = mkdtempSync(join(tmpdir(), 'bootstrap-bundle-'));
  // The bundle loads the npm packages from node_modules, found upward from its own folder.
  symlinkSync(join(repoRoot, 'node_modules'), join(tmp, 'node_modules'));
  const dir = join(tmp, 'dist');
  const res = spawnSync('npm', ['run', '--silent', 'prepare', '--', dir], { cwd: repoRoot, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`npm run prepare failed (exit ${res.status}):\n${res.stdout}${res.stderr}`);
  return { dir, output: res.stdout + res.stderr, remove: () => rmSync(tmp, { recursive: true, force: true }) };
}

/** bin/bootstrap.js with the bundle of `dir` (not the sources the test layers run), as an operator's shell starts it. */
export function runBin(dir: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, BOOTSTRAP_BUNDLE_DIR: dir };
  delete env.BOOTSTRAP_FROM_SOURCE;
  Object.assign(env, extraEnv);
  const t0 = process.hrtime.bigint();
  // The process's own CPU time (user and system, every thread), printed last on stderr as it exits.
  const res = spawnSync(process.execPath, ['--import', USAGE_AT_EXIT, join(repoRoot, 'bin/bootstrap.js'), ...args], { env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const usage = usageAtExit(res.stderr);
  return { ms, cpuMs: usage.cpuMs, code: res.status, stdout: res.stdout, stderr: usage.rest };
}

/**
 * A preload (`node --import`) that prints the process's own CPU time (user and system, every thread, ms) and
 * peak RSS (KB) last on stderr as it exits, so nothing in the engine changes for the measurement. Shared with
 * the bench's runs (lab/bench-run.ts).
 */
export const USAGE_AT_EXIT =
  'data:text/javascript,' +
  encodeURIComponent(
    'process.on("exit", () => { const u = process.resourceUsage(); process.stderr.write(`\\nusage-at-exit ${(u.userCPUTime + u.systemCPUTime) / 1000} ${u.maxRSS}\\n`); });',
  );

/** USAGE_AT_EXIT's line taken out of `text`: the CPU time (ms), the peak RSS (KB; NaN when absent) and the rest. */
export function usageAtExit(text: string): { cpuMs: number; maxRssKB: number; rest: string } {
  const m = /\n?usage-at-exit (\S+) (\S+)\n/.exec(text);
  if (!m) return { cpuMs: NaN, maxRssKB: NaN, rest: text };
  return { cpuMs: Number(m[1]), maxRssKB: Number(m[2]), rest: text.slice(0, m.index) + text.slice(m.index + m[0].length) };
}

/**
 * `bootstrap --help` run `runs` times: the wall clock from process start to exit and the process's CPU time,
 * each sorted, in ms. On a loaded machine the wall clock measures the neighbours too; the CPU time does not.
 */
export function helpTimes(dir: string, runs = 5): { wall: number[]; cpu: number[] } {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = runBin(dir, ['--help']);
    if (r.code !== 0 || !r.stdout.startsWith('usage:')) throw new Error(`bootstrap --help failed (exit ${r.code}):\n${r.stdout}${r.stderr}`);
    wall.push(r.ms);
    cpu.push(r.cpuMs);
  }
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  return { wall: sorted(wall), cpu: sorted(cpu) };
}

export const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)];

/** The npm packages the bundle's entry loads before it runs any command (its static imports, chunk by chunk). */
export function packagesAtStartup(dir: string, entry = 'main.js'): string[] {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(dir, file), 'utf8');
    // Static imports only: `import ... from "x"` and `import "x"`; a dynamic import() loads when a command runs.
    for (const m of text.matchAll(/^\s*(?:import|export)\s*(?:[^'"();]*?\bfrom\s*)?["']([^"']+)["']/gm)) {
      const spec = m[1];
      if (spec.startsWith('./')) visit(spec.slice(2));
      else if (!spec.startsWith('node:')) packages.add(spec);
    }
  };
  visit(entry);
  return [...packages].sort();
}
