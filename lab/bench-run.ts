// One measured `bootstrap` run for the bench: wall clock from process start to exit, the engine process's own
// CPU time and peak RSS (read by a preload as it exits, so nothing in the engine changes for the bench), and
// the remote commands it ran per host (counted in its run log, one header line per command).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { USAGE_AT_EXIT, usageAtExit } from '../test/support/startup.ts';

const REPO_ROOT = join(import.meta.dirname, '..');

export interface BenchRun {
  ms: number;
  code: number | null;
  out: string;
  cpuMs: number;
  maxRssMB: number;
  /** The run log the engine wrote (its `log:` line), when it says one. */
  logFile?: string;
  /** With --json: the events, parsed. */
  events: any[];
}

/**
 * `bootstrap <args>` through bin/bootstrap.js with the bundle in `bundleDir` (as `npm ci` leaves it), its
 * state in `stateDir`. Asynchronous, so a watcher in this process (the API probes of the rolling upgrade)
 * keeps running meanwhile.
 */
export function benchRun(args: string[], stateDir: string, bundleDir: string): Promise<BenchRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, BOOTSTRAP_STATE_DIR: stateDir, BOOTSTRAP_BUNDLE_DIR: bundleDir, CI: 'true' };
  delete env.BOOTSTRAP_FROM_SOURCE;
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', USAGE_AT_EXIT, join(REPO_ROOT, 'bin/bootstrap.js'), ...args], { env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const usage = usageAtExit(out);
      const text = usage.rest;
      const events = text
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l)];
          } catch {
            return [];
          }
        });
      const logLine = /^log: (\S+)$/m.exec(text)?.[1] ?? events.find((e) => e.type === 'run-end')?.logFile;
      resolve({ ms, code, out: text, cpuMs: usage.cpuMs, maxRssMB: usage.maxRssKB / 1024, logFile: logLine, events });
    });
  });
}

/**
 * Remote commands per host in a run log: each entry's header line is `<ISO time> <host> exit=<code> <ms>ms`, its
 * command on the next line. A request to the Kubernetes API through the host's SSH connection is logged the same
 * way (`$ GET …`, `$ PATCH …`, through the SSH connection) but starts no process on the host: not counted.
 */
export function commandsPerHost(logFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of readFileSync(logFile, 'utf8').matchAll(/^\d{4}-\d\d-\d\dT[\d:.]+Z (\S+) exit=.*\n {2}\$ (.*)$/gm)) {
    if (/^(GET|PATCH|DELETE) /.test(m[2]) && m[2].includes('through the SSH connection')) continue;
    counts.set(m[1], (counts.get(m[1]) ?? 0) + 1);
  }
  return counts;
}

/** The median of `xs` (the upper one of an even count). */
export function medianOf(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
