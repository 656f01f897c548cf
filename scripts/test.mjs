#!/usr/bin/env node
// `npm test`: every layer through vitest, then one plain closing line "tests: N passed, N failed"
// (CI reads that line; vitest's own summary is not one it knows). Extra arguments go to one vitest run,
// e.g. `npm test -- --project unit`.
//
// Without arguments the vitest processes below run side by side, and `npm run lint` after the unit layer:
// - the lab files in three groups (BOOTSTRAP_LAB_GROUPS to change it), each on a lab of its own
//   (BOOTSTRAP_LAB_INSTANCE 0, 1 and 2: separate hosts, subnets and state), balanced by what each file took in
//   CI (LAB_SECONDS). A lab file mostly waits (gate budgets, the twins' upstream timings): a cold build through
//   verify keeps about a quarter of one core busy, so three labs fit beside each other on CI's 2 cores once the
//   unit layer is done; within a group the files run one at a time, sharing that group's lab;
// - the unit and OpenSSH layers (a few minutes of CPU), fitted into the labs' waiting.
// All but the first lab group run at a lower priority (nice) so the first group's twins keep the CPU their
// timings need, and print their output in one piece when they end, so progress stays readable.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'bootstrap-test-'));
const extra = process.argv.slice(2);

/**
 * Runs `cmd args` (at `niceness`, when given) and resolves with its exit status and, when `header` is given,
 * its whole output, printed in one piece under that header once it ends; without a header it prints as it goes.
 */
function spawnChild(cmd, args, { header, niceness = 0, env = {} } = {}) {
  const [bin, argv] = niceness ? ['nice', ['-n', String(niceness), cmd, ...args]] : [cmd, args];
  const child = spawn(bin, argv, { stdio: header ? ['ignore', 'pipe', 'pipe'] : 'inherit', env: { ...process.env, ...env } });
  const out = [];
  if (header) {
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
  }
  return new Promise((resolve) => {
    child.on('close', (status) => {
      const text = Buffer.concat(out).toString();
      if (header) process.stdout.write(`\n── ${header} ──\n${text}`);
      resolve({ status, text });
    });
  });
}

/** One vitest process; resolves with its exit status and its JSON report's counts. */
async function vitest(name, args, { buffered = false, niceness = 0, env = {} } = {}) {
  const report = join(dir, `${name}.json`);
  const argv = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args];
  const { status } = await spawnChild('npx', argv, { niceness, env, ...(buffered && { header: `${name} (ran beside the first lab group)` }) });
  return { status, ...counts(report) };
}

function counts(report) {
  try {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    return {
      passed: json.numPassedTests,
      failed: json.numFailedTests + (json.numRuntimeErrorTestSuites ?? 0),
      skipped: json.numPendingTests + json.numTodoTests,
      failures: failuresOf(json),
    };
  } catch {
    return { passed: 0, failed: 1, skipped: 0, failures: [`${report}: no report (the vitest process died?)`] };
  }
}

/** "file › test: first line of the error" for each failed test or file, for the closing lines. */
function failuresOf(json) {
  const out = [];
  for (const file of json.testResults ?? []) {
    const name = file.name.replace(`${process.cwd()}/`, '');
    const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failed) out.push(`${name} › ${t.fullName ?? t.title}: ${failureOf(t)}`);
    if (!failed.length && file.status === 'failed') out.push(`${name}: ${firstLine(file.message)}`);
  }
  return out;
}
// vitest's JSON report words a test that ran out of time as "Error: STACK_TRACE_ERROR" and nothing else.
const failureOf = (t) => {
  const line = firstLine(t.failureMessages?.[0]);
  return line === 'Error: STACK_TRACE_ERROR' ? `ran out of its time limit (stopped after ${Math.round(t.duration ?? 0)} ms)` : line;
};
const firstLine = (text) => (text ?? '').split('\n').find((l) => l.trim()) ?? '(no message)';

/**
 * Seconds each lab file took in CI (a file not listed counts as LAB_DEFAULT_SECONDS). Only the split
 * depends on them: update them from the durations vitest prints when a file grows or shrinks much.
 */
const LAB_SECONDS = {
  'fault-matrix.test.ts': 912,
  'verify.test.ts': 585,
  'dr-restore.test.ts': 404,
  'rolling-upgrade.test.ts': 390,
  'membership.test.ts': 386,
  'replace-server.test.ts': 376,
  'flux.test.ts': 336,
  'k3s-join-causes.test.ts': 259,
  'twin-addons-cilium.test.ts': 241,
  'reset.test.ts': 238,
  'demo.test.ts': 205,
  'twin-addons-flux.test.ts': 176,
  'twin-k3s.test.ts': 151,
  'twin-addons-kube-vip.test.ts': 148,
  'cilium-cold-build.test.ts': 141,
  'cluster-drift.test.ts': 137,
  'k3s-cold-build.test.ts': 85,
  'lab-faults.test.ts': 44,
  'k3s-foreign-token.test.ts': 22,
};
const LAB_DEFAULT_SECONDS = 30;
const LAB_GROUPS = Number(process.env.BOOTSTRAP_LAB_GROUPS ?? 3);

/** The lab files in `groups` groups of about equal time: the longest first, each to the lightest group. */
function splitLabFiles(files, groups) {
  const out = Array.from({ length: groups }, () => ({ files: [], seconds: 0 }));
  const weight = (f) => LAB_SECONDS[f] ?? LAB_DEFAULT_SECONDS;
  for (const f of [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lightest = out.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    lightest.files.push(f);
    lightest.seconds += weight(f);
  }
  return out;
}

function labGroups() {
  const files = readdirSync('test/lab').filter((f) => f.endsWith('.test.ts'));
  return splitLabFiles(files, LAB_GROUPS).map((g, i) => {
    console.log(`lab group ${i + 1} (lab instance ${i}, about ${Math.round(g.seconds / 60)} min): ${g.files.join(' ')}`);
    const args = ['--project', 'lab', ...g.files.map((f) => `test/lab/${f}`)];
    return vitest(`lab group ${i + 1}`, args, { env: { BOOTSTRAP_LAB_INSTANCE: String(i) }, ...(i > 0 && { buffered: true, niceness: 5 }) });
  });
}

/**
 * `npm run lint` (formatter, linter with the layer rules, type check, dead-code check) as one more check: it passes
 * or fails as a whole, its own output printed in one piece, a failure named by its last lines.
 */
async function lint() {
  const { status, text } = await spawnChild('npm', ['run', '--silent', 'lint'], { niceness: 10, header: 'lint (npm run lint)' });
  const ok = status === 0;
  const lastLines = text
    .split('\n')
    .filter((l) => l.trim())
    .slice(-3)
    .join(' / ');
  return { status, passed: ok ? 1 : 0, failed: ok ? 0 : 1, skipped: 0, failures: ok ? [] : [`npm run lint: exit ${status}: ${lastLines}`] };
}

const runs = extra.length
  ? [vitest('tests', extra)]
  : [...labGroups(), vitest('unit and ssh', ['--project', 'unit', '--project', 'ssh'], { buffered: true, niceness: 10 }).then(async (r) => [r, await lint()])];
const results = (await Promise.all(runs)).flat();
rmSync(dir, { recursive: true, force: true });
const sum = (k) => results.reduce((n, r) => n + r[k], 0);
const skipped = sum('skipped');
// The failures once more at the very end, where a CI log's tail shows them.
for (const f of results.flatMap((r) => r.failures)) console.log(`failed: ${f}`);
console.log(`tests: ${sum('passed')} passed, ${sum('failed')} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(results.every((r) => r.status === 0) && sum('failed') === 0 ? 0 : 1);
