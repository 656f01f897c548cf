// A host without the sudo package: the sudo check of a new connection names it as TOOL_MISSING with the
// package, as node-baseline names any other program the engine runs (not a GATE_FAILED without a remedy).
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { checkSudo } from '../../src/transport/sudo.ts';
import type { ExecResult, Remote } from '../../src/transport/types.ts';

/** Runs each command in a real sh whose PATH has no sudo. */
const hostWithoutSudo = (): Remote =>
  ({
    host: 'node-1',
    async exec(command: string): Promise<ExecResult> {
      const r = spawnSync('/bin/sh', ['-c', command], { env: { PATH: '/nonexistent' }, encoding: 'utf8' });
      return { command, stdout: r.stdout, stderr: r.stderr, code: r.status, durationMs: 0 };
    },
  }) as unknown as Remote;

it('stops with TOOL_MISSING naming the sudo package when sudo is not installed', async () => {
  const err = await checkSudo(hostWithoutSudo()).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CauseError);
  expect(err).toMatchObject({ causeId: 'TOOL_MISSING', host: 'node-1' });
  const e = err as CauseError;
  expect(e.message).toContain('Debian package sudo');
  expect(e.evidence).toMatchObject({ command: 'sudo -n true', exitCode: 127 });
  expect(e.evidence.excerpt).toMatch(/sudo: (command )?not found/);
});
