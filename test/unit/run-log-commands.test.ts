// The run log as text (issue 16, item 4): a session through a transport that runs every command in a real
// `sh` (the host lock under the test's folder instead of /run/lock) writes each remote command — the lock,
// the probes, a file written, a command, a gate's polls — with its host, exit code, duration and decoded
// output, a secret's output withheld and every registered secret redacted; --json carries each as a
// `command` event with the same text.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import { Redactor, RunLog } from '../../src/engine/run-log.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { recordExec, recordNotStarted } from '../../src/transport/command-log.ts';
import { localSessionOptions, localTransport } from '../support/engine-fixture.ts';

const SECRET = 'K10c0ffee5ecret00token';

it('logs every remote command of a session as text, and --json carries each as a command event', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'run-log-commands-'));
  const motd = join(dir, 'motd');
  const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };
  const { transport } = localTransport(dir);
  let polls = 0;
  const phase: Phase = {
    id: 'motd',
    title: 'a message of the day',
    needs: [],
    hosts: () => [host],
    concurrency: 1,
    steps: [
      {
        id: 'motd',
        title: 'motd',
        probe: () => ({ file: { command: `cat ${motd}` }, token: { command: `echo ${SECRET}`, secret: true } }),
        plan: ({ probe }) => ({
          changes:
            probe.file.code === 0
              ? []
              : [
                  { kind: 'file', path: motd, content: `welcome ${SECRET}\n`, current: null, mode: '0644', secret: true },
                  { kind: 'command', description: 'say it', command: `cat ${motd}; echo 'a warning' >&2` },
                ],
        }),
      },
    ],
    gates: [
      {
        id: 'seen',
        title: 'the motd is there',
        budgetMs: 10_000,
        run: async (h, ctx) => {
          // A poll that fails once, then answers: both attempts are in the log.
          for (;;) {
            const r = await ctx.remote(h).exec(polls++ ? `test -s ${motd} && echo there` : 'echo not yet >&2; exit 3', { timeoutMs: 5_000 });
            if (r.code === 0) return;
          }
        },
      },
    ],
  };
  const events: EngineEvent[] = [];
  const result = await runSession(
    { transport, clock: systemClock, emit: (e) => events.push(e), signal: new AbortController().signal },
    localSessionOptions(dir, phase, [host], [SECRET]),
  );
  expect(result.error).toBeUndefined();
  expect(readFileSync(motd, 'utf8')).toBe(`welcome ${SECRET}\n`);

  const log = readFileSync(result.logFile, 'utf8');
  // Entry by entry: "<time> <host> exit=<code> <ms>ms", "  $ <command>", then its output as text.
  const entries = log.split(/^(?=\d{4}-\d\d-\d\dT\S+Z )/m).filter(Boolean);
  for (const e of entries) expect(e).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z node-1 exit=(\d+|none) \d+ms\n {2}\$ .+\n/);
  // An entry's command: from "  $ " to its output (a script's further lines indented by four).
  const commandOf = (e: string) =>
    e
      .split(/\n {2}(?:stdout:|stderr:|\(output withheld)/)[0]
      .split('\n')
      .slice(1)
      .join('\n')
      .slice(4);
  const entry = (command: RegExp) => entries.filter((e) => command.test(commandOf(e)));
  // The lock taken and released, each a command of its own.
  expect(entry(/bootstrap\.lock/).length).toBeGreaterThanOrEqual(2);
  // The probes, each as its own command with its decoded output; the secret probe's output is not logged.
  expect(entry(/# probe (?:\S+\.)?0\.file$/)[0]).toMatch(/exit=1 \d+ms\n.*\n {2}stderr:\n {4}cat: .*motd: No such file or directory\n/);
  expect(entry(/# probe (?:\S+\.)?0\.token$/)[0]).toContain('    (secret output: not logged)');
  // The file written: its content is a secret, so the command's output is withheld (its content was stdin).
  expect(entry(/umask 077/)[0]).toMatch(/exit=0 \d+ms\n.*\n {2}\(output withheld: the command carries a secret\)\n$/);
  // The command, its output and error output as text, the secret in them redacted.
  expect(entry(/echo 'a warning'/)[0]).toMatch(/exit=0 \d+ms\n.*\n {2}stdout:\n {4}welcome \[REDACTED\]\n {2}stderr:\n {4}a warning\n$/);
  // The gate's two polls: the failed one with its exit code and error output.
  expect(entry(/exit 3$/)[0]).toMatch(/exit=3 \d+ms\n.*\n {2}stderr:\n {4}not yet\n$/);
  expect(entry(/echo there$/)[0]).toMatch(/exit=0 \d+ms\n.*\n {2}stdout:\n {4}there\n$/);
  // Never the probe frames, never the secret in any form.
  expect(log).not.toContain('__bootstrap_probe__');
  expect(log).not.toContain(Buffer.from(`cat: ${motd}`).toString('base64').slice(0, 16));
  expect(log).not.toContain(SECRET);

  // --json: one command event per logged command, in the same order, with the same text.
  const commands = events.filter((e) => e.type === 'command');
  expect(commands).toHaveLength(entries.length);
  expect(commands.map((c) => c.command.split('\n').join('\n    '))).toEqual(entries.map((e) => commandOf(e).trimEnd()));
  expect(commands.find((c) => c.command.endsWith('exit 3'))).toMatchObject({ host: 'node-1', exitCode: 3, stdout: '', stderr: 'not yet\n' });
  expect(commands.find((c) => c.command.includes('umask 077'))).toMatchObject({ exitCode: 0, withheld: true, stdout: '' });
  for (const c of commands) expect(c.durationMs).toBeGreaterThanOrEqual(0);
  expect(JSON.stringify(events)).not.toContain(SECRET);
  // run-end stays the last event.
  expect(events.at(-1)?.type).toBe('run-end');
});

it('says why a command has no exit code: its connection lost while it ran, or closed before it started', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'run-log-none-')), 'runs', 'x.log');
  const shown: unknown[] = [];
  const log = new RunLog(file, new Redactor());
  const sink = { record: (e: Parameters<RunLog['record']>[0]) => shown.push(log.record(e)) };
  recordExec(sink, 'node-2', { command: 'systemctl restart k3s', code: null, stdout: '', stderr: '', durationMs: 40_000, lost: true }, {});
  recordNotStarted(sink, 'node-2', 'k3s kubectl get nodes');
  const text = readFileSync(file, 'utf8');
  expect(text).toMatch(/Z node-2 exit=none \(connection lost\) 40000ms\n {2}\$ systemctl restart k3s\n/);
  expect(text).toMatch(/Z node-2 exit=none \(not started: the connection closed before it\) 0ms\n {2}\$ k3s kubectl get nodes\n/);
  expect(shown).toMatchObject([
    { exitCode: null, ended: 'connection lost' },
    { exitCode: null, ended: 'not started: the connection closed before it' },
  ]);
});
