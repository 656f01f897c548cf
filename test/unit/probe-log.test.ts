// What the run log gets for a batch of probes: each probe as its own command, exit code and decoded output,
// for every caller of the one batch runner (verify's cluster reads too), never the frames. The batch
// runs through a real local `sh -s`, as it runs on a host.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { probeBatch } from '../../src/engine/probes.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import type { ExecOptions, ExecResult, LoggedCommand } from '../../src/transport/types.ts';

const host = { name: 'node-1', role: 'server', address: '127.0.0.1', founder: true } as HostRef;

function localShell(): { ctx: RunContext; logged: () => LoggedCommand[] } {
  let entries: LoggedCommand[] = [];
  const exec = async (command: string, opts: ExecOptions): Promise<ExecResult> => {
    const r = spawnSync('sh', ['-s'], { input: opts.stdin as string, encoding: 'utf8' });
    const result: ExecResult = { command, code: r.status, stdout: r.stdout, stderr: r.stderr, durationMs: 1 };
    entries = opts.logAs ? opts.logAs(result) : [result];
    return result;
  };
  const ctx = { signal: new AbortController().signal, remote: () => ({ exec }) } as unknown as RunContext;
  return { ctx, logged: () => entries };
}

it('logs each probe of a batch as text, with its exit code, and a secret probe without its output', async () => {
  const { ctx, logged } = localShell();
  const { results } = await probeBatch(
    host,
    ctx,
    {
      members: { command: 'printf \'{"members":[]}\\n\'' },
      missing: { command: 'echo no such file >&2; exit 3' },
      token: { command: 'echo K10secret', secret: true },
    },
    { sudo: true, timeoutMs: 5_000 },
  );
  expect(results.members).toMatchObject({ code: 0, stdout: '{"members":[]}\n' });
  const log = logged();
  expect(log.map((e) => [e.command, e.code])).toEqual([
    [`sudo printf '{"members":[]}\\n'   # probe members`, 0],
    ['sudo echo no such file >&2; exit 3   # probe missing', 3],
    ['sudo echo K10secret   # probe token', 0],
  ]);
  expect(log[0].stdout).toBe('{"members":[]}\n');
  expect(log[1].stderr).toBe('no such file\n');
  expect(log[2].stdout).toBe('(secret output: not logged)');
  expect(JSON.stringify(log)).not.toMatch(/__bootstrap_probe__|K10secret\n/);
});
