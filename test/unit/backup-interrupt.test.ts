// Ctrl-C during `bootstrap backup <env>` (cli/backup-command.ts → cli/interrupt.ts): the first press cancels
// the session (here while it dials the founder) and the command ends with 130; the second exits at once
// with 130, without waiting for the session. The process's SIGINT and exit are fakes: the test presses and
// sees what would have ended the process.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { backupCommand } from '../../cli/backup-command.ts';
import { EXIT_INTERRUPTED } from '../../cli/interrupt.ts';
import type { Io } from '../../cli/io.ts';
import type { RunDeps } from '../../cli/run-command.ts';
import { systemClock } from '../../src/engine/clock.ts';
import type { Remote, Transport } from '../../src/transport/types.ts';
import { repoRoot } from '../support/cli.ts';

afterEach(() => vi.restoreAllMocks());

/** A backup of prod whose connection to the founder hangs until the run's signal aborts it. */
function backupUnderTest() {
  let press: (() => void) | undefined;
  let dialling!: () => void;
  const dialled = new Promise<void>((r) => (dialling = r));
  const transport: Transport = {
    connect: (_target, opts) =>
      new Promise<Remote>((_resolve, reject) => {
        dialling();
        opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason), { once: true });
      }),
  };
  const deps: RunDeps = {
    transport,
    target: (_loaded, host) => ({ name: host.name, address: host.address, port: 22, user: 'ops', knownHostsFile: '/dev/null' }),
    clock: systemClock,
    onInterrupt: (handler) => {
      press = handler;
      return () => (press = undefined);
    },
  };
  const err: string[] = [];
  const io: Io = { out: () => undefined, err: (l) => err.push(l), isTTY: false, env: { BOOTSTRAP_STATE_DIR: mkdtempSync(join(tmpdir(), 'backup-int-')) } };
  const exits: number[] = [];
  // process.exit never returns: the fake records the code and throws, as nothing after it may run.
  vi.spyOn(process, 'exit').mockImplementation(((code: number) => {
    exits.push(code);
    throw new Error(`exit ${code}`);
  }) as never);
  const done = backupCommand({ file: join(repoRoot, 'inventory', 'prod.yaml'), env: 'prod', list: false, json: false }, io, deps);
  return { done, dialled, press: () => press!(), listening: () => press !== undefined, err, exits };
}

it(
  'the first Ctrl-C cancels the backup: the session ends with INTERRUPTED and the command with 130, the process is not exited',
  { timeout: 10_000 },
  async () => {
    const b = backupUnderTest();
    await b.dialled;
    b.press();
    expect(await b.done).toBe(EXIT_INTERRUPTED);
    expect(b.exits).toEqual([]);
    expect(b.err.join('\n')).toContain('interrupt: finishing the current command, releasing locks (Ctrl-C again to exit at once)');
    expect(b.listening()).toBe(false);
  },
);

it('the second Ctrl-C exits at once with 130, before the cancelled session has ended', { timeout: 10_000 }, async () => {
  const b = backupUnderTest();
  await b.dialled;
  let ended = false;
  void b.done.then(() => (ended = true));
  b.press();
  expect(() => b.press()).toThrow('exit 130');
  expect(b.exits).toEqual([EXIT_INTERRUPTED]);
  expect(ended).toBe(false);
  expect(await b.done).toBe(EXIT_INTERRUPTED);
});
