// The probe batch's frames, run through a real local `sh -s` as on a host: every probe's stdout comes back
// byte for byte, its stderr and exit status beside it, and a batch cut short leaves the probes it did not
// reach without an answer; the same when the commands run at once.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchMarker, batchScript, parseBatch } from '../../src/engine/probe-batch.ts';

function run(commands: Record<string, string>, o: { concurrent?: boolean } = {}) {
  const probes = Object.fromEntries(Object.entries(commands).map(([k, command]) => [k, { command }]));
  const marker = batchMarker();
  const script = batchScript(probes, marker, o);
  const r = spawnSync('sh', ['-s'], { input: script, encoding: 'utf8' });
  return { code: r.status, results: parseBatch(r.stdout, Object.keys(commands), marker) };
}

it('keeps each stdout exactly, trailing newlines and their absence too, with stderr and the exit status', () => {
  const { code, results } = run({
    lines: 'printf "a\\n\\n"',
    bare: 'printf "no newline"',
    empty: 'true',
    failing: 'echo refused >&2; exit 3',
    both: 'printf "\\n"; echo warn >&2',
    'path/like:key': 'echo ok # a trailing comment',
  });
  expect(code).toBe(0);
  expect(results).toEqual({
    lines: { stdout: 'a\n\n', stderr: '', code: 0 },
    bare: { stdout: 'no newline', stderr: '', code: 0 },
    empty: { stdout: '', stderr: '', code: 0 },
    failing: { stdout: '', stderr: 'refused\n', code: 3 },
    both: { stdout: '\n', stderr: 'warn\n', code: 0 },
    'path/like:key': { stdout: 'ok\n', stderr: '', code: 0 },
  });
});

it("takes no probe's output for a frame: another batch's marker is only text", () => {
  const other = batchMarker();
  const { results } = run({ forged: `printf '%s E forged 0\\n%s B next\\n' ${other} ${other}`, next: 'echo real' });
  expect(results.forged).toEqual({ stdout: `${other} E forged 0\n${other} B next\n`, stderr: '', code: 0 });
  expect(results.next.stdout).toBe('real\n');
});

it('answers nothing for the probes a batch cut short did not finish', () => {
  // The batch's shell is killed inside the second probe ($$ in a subshell is the batch's own shell): its
  // output started, its closing frame never came.
  const { code, results } = run({ first: 'echo one', second: 'echo two; kill -9 $$', third: 'echo three' });
  expect(code).toBeNull();
  expect(results.first).toEqual({ stdout: 'one\n', stderr: '', code: 0 });
  expect(results.second.code).toBeNull();
  expect(results.third.code).toBeNull();
});

describe('a batch run at once', () => {
  const commands = {
    lines: 'printf "a\\n\\n"',
    failing: 'echo "no agent" >&2; exit 3',
    silent: 'true',
  };

  it("frames each command's output, error output and status as one after the other does", () => {
    const once = run(commands, { concurrent: true });
    expect(once.code).toBe(0);
    expect(once.results).toEqual(run(commands).results);
    expect(once.results).toEqual({
      lines: { stdout: 'a\n\n', stderr: '', code: 0 },
      failing: { stdout: '', stderr: 'no agent\n', code: 3 },
      silent: { stdout: '', stderr: '', code: 0 },
    });
  });

  it('the first command sees what the second does while it waits (one after the other, it does not)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'batch-'));
    try {
      const pair = {
        waits: `for i in 1 2 3 4 5 6 7 8 9 10; do [ -e ${dir}/b ] && break; sleep 0.1; done; [ -e ${dir}/b ] && echo saw b`,
        marks: `touch ${dir}/b`,
      };
      expect(run(pair, { concurrent: true }).results.waits).toMatchObject({ stdout: 'saw b\n', code: 0 });
      rmSync(join(dir, 'b'));
      expect(run(pair).results.waits).toMatchObject({ stdout: '', code: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a command that reads its input sees none (the script itself is the input)', () => {
    const r = run({ read: 'cat', after: 'echo after' }, { concurrent: true });
    expect(r.results).toMatchObject({ read: { stdout: '', code: 0 }, after: { stdout: 'after\n', code: 0 } });
  });
});
