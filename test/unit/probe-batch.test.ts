// A probe batch as the host's `sh -s` runs it (here a local sh): each command's exact output, error output and
// status come back under its key, whether the commands run one after the other or at once.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchScript, parseBatch } from '../../src/engine/probe-batch.ts';

const run = (script: string) => {
  const r = spawnSync('sh', ['-s'], { input: script, encoding: 'utf8' });
  return { stdout: r.stdout, code: r.status };
};

const commands = {
  slow: { command: 'printf "a\\n\\n"' },
  failing: { command: 'echo "no agent" >&2; exit 3' },
  silent: { command: 'true' },
};

describe('probe batch', () => {
  for (const concurrent of [false, true]) {
    it(`frames each command's output, error output and status${concurrent ? ', run at once' : ''}`, () => {
      const r = run(batchScript(commands, { concurrent }));
      expect(r.code).toBe(0);
      expect(parseBatch(r.stdout, Object.keys(commands))).toEqual({
        slow: { stdout: 'a\n\n', stderr: '', code: 0 },
        failing: { stdout: '', stderr: 'no agent\n', code: 3 },
        silent: { stdout: '', stderr: '', code: 0 },
      });
    });
  }

  it('at once: the first command sees what the second does while it waits (one after the other, it does not)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'batch-'));
    try {
      const pair = {
        waits: { command: `for i in 1 2 3 4 5 6 7 8 9 10; do [ -e ${dir}/b ] && break; sleep 0.1; done; [ -e ${dir}/b ] && echo saw b` },
        marks: { command: `touch ${dir}/b` },
      };
      expect(parseBatch(run(batchScript(pair, { concurrent: true })).stdout, ['waits']).waits).toMatchObject({ stdout: 'saw b\n', code: 0 });
      rmSync(join(dir, 'b'));
      expect(parseBatch(run(batchScript(pair)).stdout, ['waits']).waits).toMatchObject({ stdout: '', code: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a command that reads its input sees none (the script itself is the input)', () => {
    const r = run(batchScript({ read: { command: 'cat' }, after: { command: 'echo after' } }, { concurrent: true }));
    expect(parseBatch(r.stdout, ['read', 'after'])).toMatchObject({ read: { stdout: '', code: 0 }, after: { stdout: 'after\n', code: 0 } });
  });
});
