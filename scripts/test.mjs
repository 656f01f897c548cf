#!/usr/bin/env node
// `npm test`: every layer through vitest, then one plain closing line "tests: N passed, N failed"
// (CI reads that line; vitest's own summary is not one it knows). Extra arguments go to one vitest run,
// e.g. `npm test -- --project unit`.
//
// Without arguments the lab layer and the two others run side by side, as two vitest processes: the lab
// files run one at a time and mostly wait on hosts, so the unit and OpenSSH layers (a few minutes of CPU)
// fit into that waiting instead of adding to the wall time. They run at a lower priority (nice) so the
// lab's twins keep the CPU their timings need; their output is printed in one piece when they end, so the
// lab's progress stays readable.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'bootstrap-test-'));
const extra = process.argv.slice(2);

/** One vitest process; resolves with its exit status and its JSON report's counts. */
function vitest(name, args, { buffered = false, niceness = 0 } = {}) {
  const report = join(dir, `${name}.json`);
  const argv = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args];
  const [cmd, cmdArgs] = niceness ? ['nice', ['-n', String(niceness), 'npx', ...argv]] : ['npx', argv];
  const child = spawn(cmd, cmdArgs, { stdio: buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  const out = [];
  if (buffered) {
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
  }
  return new Promise((resolve) => {
    child.on('close', (status) => {
      if (buffered) {
        process.stdout.write(`\n── ${name} (ran beside the lab layer) ──\n`);
        process.stdout.write(Buffer.concat(out));
      }
      resolve({ status, ...counts(report) });
    });
  });
}

function counts(report) {
  try {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    return {
      passed: json.numPassedTests,
      failed: json.numFailedTests + (json.numRuntimeErrorTestSuites ?? 0),
      skipped: json.numPendingTests + json.numTodoTests,
    };
  } catch {
    return { passed: 0, failed: 1, skipped: 0 };
  }
}

const runs = extra.length
  ? [vitest('tests', extra)]
  : [vitest('lab', ['--project', 'lab']), vitest('unit and ssh', ['--project', 'unit', '--project', 'ssh'], { buffered: true, niceness: 10 })];
const results = await Promise.all(runs);
rmSync(dir, { recursive: true, force: true });
const sum = (k) => results.reduce((n, r) => n + r[k], 0);
const skipped = sum('skipped');
console.log(`tests: ${sum('passed')} passed, ${sum('failed')} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(results.every((r) => r.status === 0) && sum('failed') === 0 ? 0 : 1);
