// Every session writes its report beside its run log, also when it stops, 0600, with the run's secrets
// redacted from whatever the events carried; the run-end event names it.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { runSession } from '../../src/engine/session.ts';
import { CauseError } from '../../src/errors.ts';
import { plainRenderer } from '../../src/view/plain.ts';
import { managedFile } from '../../phases/steps/managed-file.ts';
import { hosts, topologyFor } from '../support/engine-fixture.ts';
import { LocalRemote } from '../support/local-remote.ts';

const SECRET = 'K10feedface::server:s3cr3t-password';

it('a run stopped before any host was dialled writes runs/<id>.html next to its log, 0600, secrets redacted', async () => {
  const host: HostRef = { name: 'node-1', address: '10.0.0.1', role: 'server', founder: true };
  const phase = {
    id: 'k3s-founder',
    title: 'Found the cluster',
    hosts: () => [host],
    steps: [],
    prepare: async () => ({
      stops: [new CauseError('TOKEN_MALFORMED', { evidence: { command: 'read cluster-token.json', seen: `not a token: ${SECRET}` }, retryable: false })],
    }),
  } as unknown as Phase;
  const events: EngineEvent[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'bootstrap-report-'));
  const result = await runSession(
    {
      transport: { connect: async () => Promise.reject(new Error('no dial')), close: async () => undefined } as any,
      clock: systemClock,
      emit: (e) => events.push(e),
      signal: new AbortController().signal,
    },
    {
      env: 't',
      inventory: {} as any,
      target: (h) => ({ host: h.address }) as any,
      stateDir,
      waivers: [],
      secrets: [SECRET],
      // A warning is emitted as it is: the report redacts what it draws all the same.
      plan: { phases: [phase], topology: topologyFor([host]), check: false, resume: false, warnings: [`the token ${SECRET} looks odd`] },
    },
  );
  const end = events.at(-1) as Extract<EngineEvent, { type: 'run-end' }>;
  expect(end.type).toBe('run-end');
  expect(end.reportFile).toBe(result.reportFile);
  expect(end.reportFile).toBe(result.logFile.replace(/\.log$/, '.html'));
  expect(statSync(end.reportFile!).mode & 0o777).toBe(0o600);
  const page = readFileSync(end.reportFile!, 'utf8');
  expect(page).toContain('data-cause="TOKEN_MALFORMED"');
  expect(page).toContain('<td>k3s-founder</td><td class="not-run">not run</td>');
  expect(page).toContain('[REDACTED]');
  expect(page).not.toContain('s3cr3t');
});

it('a report that cannot be written costs a warning, never the run', async () => {
  const events: EngineEvent[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'bootstrap-report-'));
  // The runs folder goes away under the run (root may write anywhere, so a mode would not stop it).
  const phase = {
    id: 'p',
    title: 'a phase that takes the runs folder away',
    hosts: () => [],
    steps: [],
    prepare: async () => {
      rmSync(join(stateDir, 'runs'), { recursive: true });
      writeFileSync(join(stateDir, 'runs'), 'not a folder');
      return { stops: [] };
    },
  } as unknown as Phase;
  const result = await runSession(
    {
      transport: { connect: async () => ({}), close: async () => undefined } as any,
      clock: systemClock,
      emit: (e) => events.push(e),
      signal: new AbortController().signal,
    },
    {
      env: 't',
      inventory: {} as any,
      target: () => ({}) as any,
      stateDir,
      waivers: [],
      plan: { phases: [phase], topology: topologyFor([]), check: true, resume: false },
    },
  );
  expect(result.error).toBeUndefined();
  expect(result.reportFile).toBeUndefined();
  expect(events.at(-1)).toMatchObject({ type: 'run-end' });
  expect(events.at(-1)).not.toHaveProperty('reportFile');
  expect(events.at(-2)).toMatchObject({ type: 'warning', message: expect.stringMatching(/^the run report could not be written: ENOTDIR/) });
});

it("the terminal's last lines say where the log and the report are", () => {
  const lines: string[] = [];
  const summary = { ok: 1, changed: 0, wouldChange: 0, stopped: 0, durationMs: 1_000, check: false, phaseDurations: {} };
  plainRenderer((l) => lines.push(l))({ type: 'run-end', summary, logFile: 'runs/r.log', reportFile: 'runs/r.html' });
  expect(lines.slice(-2)).toEqual(['log: runs/r.log', 'report: runs/r.html']);
});

it("a gate stopped on one host mid-phase: the report shows the stop on that host's row of that phase", async () => {
  const H = hosts('h1', 'h2');
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-report-files-'));
  const phase: Phase = {
    id: 'files',
    title: 'Write the motd',
    hosts: () => H,
    concurrency: 4,
    steps: [
      managedFile({ id: 'motd', title: 'motd', path: (h) => join(dir, `${h.name}.motd`), local: async () => undefined, content: () => 'hi\n', mode: '0644' }),
    ],
    gates: [
      {
        id: 'seen',
        title: 'The motd is seen',
        budgetMs: 5_000,
        readOnly: true,
        run: async (h: HostRef) => {
          if (h.name === 'h2') throw new CauseError('GATE_FAILED', { host: 'h2', evidence: { seen: '<b>no motd</b> on h2' } });
        },
      },
    ],
  } as unknown as Phase;
  const events: EngineEvent[] = [];
  await runSession(
    {
      transport: { connect: async (t: { host: string }) => new LocalRemote(t.host) } as any,
      clock: systemClock,
      emit: (e) => events.push(e),
      signal: new AbortController().signal,
    },
    {
      env: 't',
      inventory: {} as any,
      target: (h) => ({ host: h.name }) as any,
      stateDir: dir,
      waivers: [],
      plan: { phases: [phase], topology: topologyFor(H), check: true, resume: false },
    },
  );
  const page = readFileSync((events.at(-1) as Extract<EngineEvent, { type: 'run-end' }>).reportFile!, 'utf8');
  const h2 = page.slice(page.indexOf('data-phase="files" data-host="h2"'));
  expect(page.indexOf('data-phase="files" data-host="h1"')).toBeGreaterThan(0);
  expect(h2).toMatch(/^data-phase="files" data-host="h2"/);
  expect(h2).toMatch(/step · motd <span class="meta">would change/);
  expect(h2).toMatch(/gate · The motd is seen <span class="meta">stopped · [\d.]+ s of 5.0 s/);
  expect(h2).toMatch(/<div class="stop" data-cause="GATE_FAILED" data-host="h2">[\s\S]*&lt;b&gt;no motd&lt;\/b&gt; on h2/);
  expect(page.match(/<div class="row host stopped"/g)).toHaveLength(1);
});
