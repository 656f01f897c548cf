// The change kinds a plan holds and how the engine performs them: a command says where it runs (`on`)
// and how it fails (`failsAs`); a local change writes the state folder only, whole and 0600 when secret;
// an action lists every command it runs, and check mode never calls it.
import { mkdtempSync, readFileSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { applyPlan } from '../../src/engine/apply.ts';
import { describeChange, type ActionChange, type Change, type CommandChange, type LocalChange } from '../../src/engine/changes.ts';
import type { EngineContext, RunContext } from '../../src/engine/context.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import { emptySummary, runPhases } from '../../src/engine/run.ts';
import type { HostRef, Phase } from '../../src/engine/phase.ts';
import { CauseError, causesOf } from '../../src/errors.ts';
import type { ExecOptions, ExecResult, Remote } from '../../src/transport/types.ts';
import { fixture, hosts } from '../support/engine-fixture.ts';

const [h1, h2] = hosts('h1', 'h2');

/** Fake connections per host: each records what ran on it, and answers with `answer`. */
function remotes(answer: (host: string, command: string) => Partial<ExecResult> = () => ({})) {
  const ran: Record<string, string[]> = { h1: [], h2: [] };
  const remote = (h: HostRef): Remote => ({
    host: h.name,
    async exec(command: string, _opts?: ExecOptions): Promise<ExecResult> {
      ran[h.name].push(command);
      return { command, stdout: '', stderr: '', code: 0, durationMs: 1, ...answer(h.name, command) };
    },
    async close() {},
  });
  return { ran, remote };
}

function ctxWith(remote: (h: HostRef) => Remote, opts: { check?: boolean; stateDir?: string } = {}) {
  const f = fixture({ check: opts.check ?? false, hosts: [h1, h2] });
  const inventory = {
    derived: { founder: { name: 'h1' }, servers: [h1, h2].map((h) => ({ name: h.name, address: h.address })), agents: [] },
  } as unknown as RunContext['inventory'];
  const ctx: EngineContext = { ...f.ctx, inventory, remote, stateDir: opts.stateDir ?? mkdtempSync(join(tmpdir(), 'change-kinds-')) };
  return { ctx, events: f.events };
}

const failure = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CauseError);
  return err as CauseError;
};

describe('describeChange', () => {
  it('a command shows where it runs when not on the step host, and never a secret', () => {
    expect(describeChange({ kind: 'command', description: 'stop k3s there', command: 'systemctl stop k3s', sudo: true, on: 'h2' })).toEqual({
      summary: 'stop k3s there',
      detail: 'on h2: $ sudo systemctl stop k3s',
    });
    expect(describeChange({ kind: 'command', description: 'start', command: 'systemctl start k3s' })).toEqual({
      summary: 'start',
      detail: '$ systemctl start k3s',
    });
    expect(describeChange({ kind: 'command', description: 'x', command: 'echo TOKEN', secret: true, on: 'h2' }).detail).toBe(
      '(command carries a secret: not shown)',
    );
  });

  it('a local change names the file on the operator machine; a secret one never shows its content', () => {
    const secret: LocalChange = {
      kind: 'local',
      path: '/state/lab/cluster-token.json',
      content: '{"secret":"s3cret"}',
      current: null,
      mode: '0600',
      secret: true,
    };
    expect(describeChange(secret)).toEqual({
      summary: "create /state/lab/cluster-token.json on the operator's machine (mode 0600)",
      detail: '(secret content: diff not shown)',
    });
    const plain = describeChange({ kind: 'local', path: '/state/lab/notes', content: 'b\n', current: 'a\n', mode: '0644' });
    expect(plain.summary).toBe("update /state/lab/notes on the operator's machine (mode 0644)");
    expect(plain.detail).toContain('-a');
    expect(plain.detail).toContain('+b');
    expect(describeChange({ ...secret, current: secret.content }).summary).toMatch(/^chmod /);
  });

  it('an action lists every command it runs, on which host, what it writes and its budget', () => {
    const action: ActionChange = {
      kind: 'action',
      description: 'take a backup',
      on: 'h2',
      runs: ['sudo k3s etcd-snapshot save', 'sudo cat /token'],
      writes: ['/state/backups/b1/snapshot'],
      budgetMs: 150_000,
      run: async () => undefined,
    };
    expect(describeChange(action)).toEqual({
      summary: 'take a backup',
      detail: ['on h2: $ sudo k3s etcd-snapshot save', 'on h2: $ sudo cat /token', 'writes /state/backups/b1/snapshot', '(budget 2 min 30 s)'].join('\n'),
    });
    expect(describeChange({ ...action, on: undefined, writes: undefined, budgetMs: undefined }).detail).toBe(
      '$ sudo k3s etcd-snapshot save\n$ sudo cat /token',
    );
  });
});

describe('failsAs', () => {
  const failing = remotes(() => ({ code: 1, stderr: 'first\nencrypted with different token' }));
  const run = (change: CommandChange) => applyPlan([change], h1, ctxWith(failing.remote).ctx, { phase: 'p', step: 's' });

  it('a cause id names the failure with the command, exit code and output', async () => {
    const err = await failure(run({ kind: 'command', description: 'reset', command: 'k3s server --cluster-reset', failsAs: 'CLUSTER_RESET_FAILED' }));
    expect(err).toMatchObject({ causeId: 'CLUSTER_RESET_FAILED', host: 'h1' });
    expect(err.evidence).toMatchObject({
      command: 'k3s server --cluster-reset',
      exitCode: 1,
      seen: 'encrypted with different token',
      excerpt: 'first\nencrypted with different token',
    });
  });

  it('a function of the result decides the cause; undefined leaves APPLY_FAILED', async () => {
    const change: CommandChange = {
      kind: 'command',
      description: 'reset',
      command: 'k3s server --cluster-reset',
      failsAs: (res, host) => (/different token/.test(res.stderr) ? new CauseError('TOKEN_REJECTED', { host, evidence: { exitCode: res.code } }) : undefined),
    };
    expect(await failure(run(change))).toMatchObject({ causeId: 'TOKEN_REJECTED', host: 'h1' });
    const other = remotes(() => ({ code: 2, stderr: 'no space left on device' }));
    const err = await failure(applyPlan([change], h1, ctxWith(other.remote).ctx, { phase: 'p', step: 's' }));
    expect(err).toMatchObject({ causeId: 'APPLY_FAILED', host: 'h1' });
    expect(err.evidence).toMatchObject({ exitCode: 2, excerpt: 'no space left on device' });
  });

  it('a lost connection stays SSH_UNREACHABLE whatever failsAs says (nobody knows how far it got)', async () => {
    const lost = remotes(() => ({ code: null, lost: true }));
    const err = await failure(
      applyPlan(
        [{ kind: 'command', description: 'reset', command: 'k3s server --cluster-reset', failsAs: 'CLUSTER_RESET_FAILED' }],
        h1,
        ctxWith(lost.remote).ctx,
        { phase: 'p', step: 's' },
      ),
    );
    expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: 'h1' });
  });
});

describe('Ctrl-C during a change', () => {
  it("the command it cuts off is the run's stop (its reason), not APPLY_FAILED nor the change's failsAs", async () => {
    const ctrlC = new AbortController();
    // The connection ends the cancelled command as it ends one past its budget: no exit code.
    const cut = remotes(() => {
      ctrlC.abort(new Error('interrupted'));
      return { code: null };
    });
    const { ctx } = ctxWith(cut.remote);
    const err = await applyPlan(
      [{ kind: 'command', description: 'reset', command: 'k3s server --cluster-reset', failsAs: 'CLUSTER_RESET_FAILED' }],
      h1,
      { ...ctx, signal: ctrlC.signal },
      { phase: 'p', step: 's' },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(CauseError);
    expect((err as Error).message).toBe('interrupted');
    // The same command failing on its own still names its cause.
    const failed = remotes(() => ({ code: null }));
    expect(
      await failure(
        applyPlan(
          [{ kind: 'command', description: 'reset', command: 'k3s server --cluster-reset', failsAs: 'CLUSTER_RESET_FAILED' }],
          h1,
          ctxWith(failed.remote).ctx,
          {
            phase: 'p',
            step: 's',
          },
        ),
      ),
    ).toMatchObject({ causeId: 'CLUSTER_RESET_FAILED' });
  });
});

describe('on', () => {
  it("routes a command, and an action's host, to the named host's connection", async () => {
    const r = remotes();
    const acted: string[] = [];
    const changes: Change[] = [
      { kind: 'command', description: 'here', command: 'echo here' },
      { kind: 'command', description: 'there', command: 'echo there', on: 'h2' },
      {
        kind: 'action',
        description: 'through h2',
        on: 'h2',
        runs: ['echo via'],
        run: async (ctx) => void acted.push(ctx.host.name, (await ctx.remote(ctx.host).exec('echo via')).command),
      },
    ];
    await applyPlan(changes, h1, ctxWith(r.remote).ctx, { phase: 'p', step: 's' });
    expect(r.ran).toEqual({ h1: ['echo here'], h2: ['echo there', 'echo via'] });
    expect(acted).toEqual(['h2', 'echo via']);
  });

  it('a host the inventory does not have is a bug of the plan, not a cause', async () => {
    const err = await applyPlan([{ kind: 'command', description: 'x', command: 'true', on: 'h9' }], h1, ctxWith(remotes().remote).ctx, {
      phase: 'p',
      step: 's',
    }).catch((e: unknown) => e);
    expect(causesOf(err)).toEqual([]);
    expect(String(err)).toMatch(/h9, which is no host of the inventory/);
  });
});

describe('local changes', () => {
  it('are written whole in the state folder, a secret one 0600; a path outside it is refused', async () => {
    const { ctx } = ctxWith(remotes().remote);
    const token = join(ctx.stateDir, 'lab', 'cluster-token.json');
    await applyPlan([{ kind: 'local', path: token, content: '{"secret":"s"}', current: null, mode: '0644', secret: true }], h1, ctx, { phase: 'p', step: 's' });
    expect(readFileSync(token, 'utf8')).toBe('{"secret":"s"}');
    expect(statSync(token).mode & 0o777).toBe(0o600);
    const outside = join(tmpdir(), 'not-the-state-folder');
    const err = await applyPlan([{ kind: 'local', path: outside, content: 'x', current: null, mode: '0600' }], h1, ctx, { phase: 'p', step: 's' }).catch(
      (e: unknown) => e,
    );
    expect(String(err)).toMatch(/outside the state folder/);
    expect(existsSync(outside)).toBe(false);
  });
});

describe('actions', () => {
  it('one with a budget is seen starting and ending; one that overruns it is APPLY_FAILED', async () => {
    const { ctx, events } = ctxWith(remotes().remote);
    await applyPlan([{ kind: 'action', description: 'drill', runs: ['true'], budgetMs: 5_000, run: async () => undefined }], h1, ctx, {
      phase: 'verify',
      step: 'drill',
    });
    expect(events.map((e: EngineEvent) => e.type)).toEqual(['action-start', 'action-end']);
    expect(events[0]).toMatchObject({ phase: 'verify', step: 'drill', host: 'h1', description: 'drill', budgetMs: 5_000 });
    expect(events[1]).toMatchObject({ status: 'ok' });
    const stuck: ActionChange = { kind: 'action', description: 'stuck', runs: ['sleep'], budgetMs: 50, run: () => new Promise(() => undefined) };
    const err = await failure(applyPlan([stuck], h1, ctx, { phase: 'verify', step: 'drill' }));
    expect(err).toMatchObject({ causeId: 'APPLY_FAILED', host: 'h1' });
    expect(err.evidence).toMatchObject({ command: 'stuck', seen: 'the action did not end within its budget of 0 s' });
    expect(events.at(-1)).toMatchObject({ type: 'action-end', status: 'failed' });
  });

  it("check mode plans every kind and performs none: no action's run, no local write, no command", async () => {
    const r = remotes();
    const run = vi.fn(async () => undefined);
    const stateDir = mkdtempSync(join(tmpdir(), 'change-kinds-'));
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => [h1],
      concurrency: 1,
      steps: [
        {
          id: 's',
          title: 's',
          plan: () => ({
            changes: [
              { kind: 'command', description: 'there', command: 'echo there', on: 'h2' },
              { kind: 'local', path: join(stateDir, 'kubeconfig'), content: 'x', current: null, mode: '0600', secret: true },
              { kind: 'action', description: 'act', runs: ['echo act'], run },
            ],
          }),
        },
      ],
      afterGates: [
        {
          id: 'after',
          title: 'after',
          plan: () => ({ changes: [{ kind: 'action', description: 'drill', runs: ['systemctl stop k3s'], budgetMs: 1_000, run }] }),
        },
      ],
    };
    const { ctx, events } = ctxWith(r.remote, { check: true, stateDir });
    const summary = await runPhases({ phases: [phase], ctx, summary: emptySummary(true) });
    expect(summary).toMatchObject({ wouldChange: 2, changed: 0 });
    expect(run).not.toHaveBeenCalled();
    expect(existsSync(join(stateDir, 'kubeconfig'))).toBe(false);
    expect(r.ran).toEqual({ h1: [], h2: [] });
    const ends = events.filter((e) => e.type === 'step-end');
    expect(ends.map((e) => e.type === 'step-end' && [e.step, e.status])).toEqual([
      ['s', 'would-change'],
      ['after', 'would-change'],
    ]);
    // What the run would do is all in the plan: the drill's command too.
    expect(JSON.stringify(ends)).toContain('$ systemctl stop k3s');
  });

  it('steps after the gates run after them, and apply outside check mode', async () => {
    const order: string[] = [];
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => [h1],
      concurrency: 1,
      steps: [
        { id: 's', title: 's', plan: () => ({ changes: [{ kind: 'action', description: 'first', runs: [], run: async () => void order.push('step') }] }) },
      ],
      gates: [{ id: 'g', title: 'g', budgetMs: 1_000, run: async () => void order.push('gate') }],
      afterGates: [
        {
          id: 'after',
          title: 'after',
          plan: () => ({ changes: [{ kind: 'action', description: 'then', runs: [], run: async () => void order.push('after') }] }),
        },
      ],
    };
    const { ctx } = ctxWith(remotes().remote);
    const summary = await runPhases({ phases: [phase], ctx, summary: emptySummary(false) });
    expect(order).toEqual(['step', 'gate', 'after']);
    expect(summary).toMatchObject({ changed: 2, ok: 1 });
  });
});
