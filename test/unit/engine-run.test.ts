import { mkdtempSync, readFileSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { CauseError, CauseErrors } from '../../src/errors.ts';
import type { Phase, Step } from '../../src/engine/phase.ts';
import { Journal } from '../../src/engine/journal.ts';
import { emptySummary, runPhases } from '../../src/engine/run.ts';
import { managedFile } from '../../phases/steps/managed-file.ts';
import { fixture, hosts } from '../support/engine-fixture.ts';
import { runFact } from '../../src/engine/facts.ts';

const rendered = runFact<string>('test.rendered');

const H = hosts('h1', 'h2');

function filePhase(dir: string, extra: Partial<Phase> = {}): Phase {
  return {
    id: 'files',
    title: 'files',
    needs: [],
    hosts: () => H,
    concurrency: 4,
    steps: [
      managedFile({
        id: 'motd',
        title: 'motd',
        path: (h) => join(dir, `${h.name}.motd`),
        local: async () => undefined,
        content: (_l, h) => `managed by bootstrap on ${h.name}\n\n`,
        mode: '0640',
      }),
    ],
    ...extra,
  };
}

async function run(phases: Phase[], check: boolean, waivers: { cause: string; reason: string }[] = []) {
  const f = fixture({ check, hosts: H });
  const summary = emptySummary(check);
  let error: unknown;
  try {
    await runPhases({ phases, ctx: f.ctx, summary, waivers });
  } catch (err) {
    error = err;
  }
  return { ...f, summary, error };
}

describe('probe → plan → apply', () => {
  it('check mode before any run lists every change and touches nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    const r = await run([filePhase(dir)], true);
    expect(r.error).toBeUndefined();
    expect(r.summary).toMatchObject({ ok: 0, wouldChange: 2, changed: 0 });
    const step = r.events.find((e) => e.type === 'step-end' && e.host === 'h1');
    expect(step).toMatchObject({ status: 'would-change' });
    expect(JSON.stringify(step)).toContain('+managed by bootstrap on h1');
    expect(existsSync(join(dir, 'h1.motd'))).toBe(false);
  });

  it('applies, then a second run changes nothing and check mode after it would change nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    const first = await run([filePhase(dir)], false);
    expect(first.summary).toMatchObject({ changed: 2 });
    // Trailing newlines are content too: the probe must read them back exactly.
    expect(readFileSync(join(dir, 'h2.motd'), 'utf8')).toBe('managed by bootstrap on h2\n\n');
    expect((statSync(join(dir, 'h2.motd')).mode & 0o777).toString(8)).toBe('640');
    const second = await run([filePhase(dir)], false);
    expect(second.summary).toMatchObject({ ok: 2, changed: 0 });
    const check = await run([filePhase(dir)], true);
    expect(check.summary).toMatchObject({ ok: 2, wouldChange: 0 });
  });

  it('sees a drifted mode or content and repairs it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    await run([filePhase(dir)], false);
    writeFileSync(join(dir, 'h1.motd'), 'edited by hand\n');
    const check = await run([filePhase(dir)], true);
    expect(check.summary).toMatchObject({ ok: 1, wouldChange: 1 });
    expect(JSON.stringify(check.events)).toContain('-edited by hand');
    const fix = await run([filePhase(dir)], false);
    expect(fix.summary).toMatchObject({ changed: 1, ok: 1 });
  });

  it("never calls an action's run in check mode, and always runs the probe", async () => {
    const probe = vi.fn(() => ({ x: { command: 'echo seen' } }));
    const apply = vi.fn(async () => undefined);
    const step: Step = {
      id: 's',
      title: 's',
      probe,
      plan: ({ probe: p }) => ({ changes: [{ kind: 'action', description: `saw ${p.x.stdout.trim()}`, runs: ['true'], run: apply }] }),
    };
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 2, steps: [step] };
    const r = await run([phase], true);
    expect(probe).toHaveBeenCalledTimes(2);
    expect(apply).not.toHaveBeenCalled();
    expect(JSON.stringify(r.events)).toContain('saw seen');
    const wet = await run([phase], false);
    expect(apply).toHaveBeenCalledTimes(2);
    expect(wet.summary.changed).toBe(2);
  });

  it("batches a phase's probes into one remote execution per host", async () => {
    const steps: Step[] = ['a', 'b', 'c'].map((id) => ({
      id,
      title: id,
      probe: () => ({ one: { command: `echo ${id}1` }, two: { command: `echo ${id}2; exit 3` } }),
      plan: ({ probe }) => {
        expect(probe.one.stdout).toBe(`${id}1\n`);
        expect(probe.two).toMatchObject({ stdout: `${id}2\n`, code: 3 });
        return { changes: [] };
      },
    }));
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 2, steps };
    const r = await run([phase], false);
    expect(r.error).toBeUndefined();
    expect(r.summary.ok).toBe(6);
    expect(r.remotes.get('h1')!.execs).toHaveLength(1);
  });

  it("leaves a step that is not the host's (appliesTo) unprobed, unplanned and unshown there, in check mode too", async () => {
    const probe = vi.fn((h: { name: string }) => ({ x: { command: `echo only-${h.name}` } }));
    const plan = vi.fn(() => ({ changes: [] }));
    const steps: Step[] = [
      { id: 'only', title: 'only on h2', appliesTo: (h) => h.name === 'h2', probe, plan },
      { id: 'every', title: 'every host', plan: () => ({ changes: [] }) },
    ];
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 2, steps };
    for (const check of [true, false]) {
      probe.mockClear();
      plan.mockClear();
      const r = await run([phase], check);
      expect(r.error).toBeUndefined();
      const shown = r.events.flatMap((e) => (e.type === 'step-end' ? [`${e.host} ${e.step}`] : [])).sort();
      expect(shown).toEqual(['h1 every', 'h2 every', 'h2 only']);
      expect(r.summary.ok).toBe(3);
      expect(probe.mock.calls.map(([h]) => h.name)).not.toContain('h1');
      expect(plan).toHaveBeenCalledTimes(1);
      expect(JSON.stringify(r.remotes.get('h1')!.execs)).not.toContain('only-h2');
    }
  });
});

describe('stops', () => {
  const stopping = (cause: 'GATE_FAILED' | 'PROBE_FAILED'): Step => ({
    id: 's',
    title: 's',
    plan: ({ host }) => ({ changes: [], stops: [new CauseError(cause, { host: host.name, evidence: { seen: 'x' } })] }),
  });

  it('keeps every failing host of a parallel phase as its own cause', async () => {
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 2, steps: [stopping('GATE_FAILED')] };
    const r = await run([phase], false);
    expect(r.error).toBeInstanceOf(CauseErrors);
    expect((r.error as CauseErrors).errors.map((e) => e.host).sort()).toEqual(['h1', 'h2']);
  });

  it("keeps several causes from one host (CauseErrors) next to another host's cause", async () => {
    const step: Step = {
      id: 's',
      title: 's',
      plan: ({ host }) => ({
        changes: [],
        stops:
          host.name === 'h1'
            ? [new CauseError('GATE_FAILED', { host: 'h1' }), new CauseError('PROBE_FAILED', { host: 'h1' })]
            : [new CauseError('APPLY_FAILED', { host: 'h2' })],
      }),
    };
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 2, steps: [step] };
    const r = await run([phase], false);
    expect(r.error).toBeInstanceOf(CauseErrors);
    expect((r.error as CauseErrors).errors.map((e) => e.causeId).sort()).toEqual(['APPLY_FAILED', 'GATE_FAILED', 'PROBE_FAILED']);
  });

  it('stops a serial phase at the first failing host', async () => {
    const seen: string[] = [];
    const step: Step = { ...stopping('GATE_FAILED'), probe: (h) => (seen.push(h.name), {}) };
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H, concurrency: 'serial', steps: [step] };
    const r = await run([phase], false);
    expect((r.error as CauseError).host).toBe('h1');
    expect(seen).toEqual(['h1']);
  });

  it('stops in check mode too: a gate seen in a probe is not a change', async () => {
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H.slice(0, 1), concurrency: 1, steps: [stopping('GATE_FAILED')] };
    const r = await run([phase], true);
    expect((r.error as CauseError).causeId).toBe('GATE_FAILED');
  });

  it('turns a waived cause into a printed waiver instead of a stop', async () => {
    const phase: Phase = { id: 'p', title: 'p', needs: [], hosts: () => H.slice(0, 1), concurrency: 1, steps: [stopping('PROBE_FAILED')] };
    const r = await run([phase], false, [{ cause: 'PROBE_FAILED', reason: 'the lab cannot' }]);
    expect(r.error).toBeUndefined();
    expect(r.events).toContainEqual(expect.objectContaining({ type: 'waived', cause: 'PROBE_FAILED', reason: 'the lab cannot', host: 'h1' }));
  });

  it('ends a gate that ignores its budget with GATE_FAILED', async () => {
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => H.slice(0, 1),
      concurrency: 1,
      steps: [],
      gates: [{ id: 'g', title: 'never answers', budgetMs: 50, run: () => new Promise(() => undefined) }],
    };
    const t0 = Date.now();
    const r = await run([phase], false);
    expect((r.error as CauseError).causeId).toBe('GATE_FAILED');
    expect((r.error as CauseError).evidence.seen).toContain('never answers');
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('reports a non-read-only gate as "would wait" in check mode without running it', async () => {
    const gate = vi.fn(async () => undefined);
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => H.slice(0, 1),
      concurrency: 1,
      steps: [],
      gates: [{ id: 'g', title: 'api ready', budgetMs: 1000, run: gate }],
    };
    const r = await run([phase], true);
    expect(gate).not.toHaveBeenCalled();
    expect(r.events).toContainEqual(expect.objectContaining({ type: 'gate-end', status: 'would-wait' }));
  });
});

describe('prepare', () => {
  it("stops the run before the FIRST phase changes anything when a later phase's preparation fails", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    const later: Phase = {
      id: 'later',
      title: 'later',
      needs: ['files'],
      hosts: () => H,
      concurrency: 1,
      steps: [],
      prepare: async () => ({ stops: [new CauseError('GATE_FAILED', { evidence: { seen: 'K3S_API_HOST is not defined' } })] }),
    };
    const r = await run([filePhase(dir), later], false);
    expect((r.error as CauseError).evidence.seen).toBe('K3S_API_HOST is not defined');
    expect(existsSync(join(dir, 'h1.motd'))).toBe(false);
    expect(r.events.filter((e) => e.type === 'step-start')).toEqual([]);
  });

  it("shares a prepared fact with the phase's steps", async () => {
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => H.slice(0, 1),
      concurrency: 1,
      prepare: async () => ({ stops: [], facts: [rendered('from prepare')] }),
      steps: [{ id: 's', title: 's', plan: ({ ctx }) => ({ changes: [{ kind: 'command', description: ctx.facts.need(rendered), command: 'true' }] }) }],
    };
    const r = await run([phase], true);
    expect(JSON.stringify(r.events)).toContain('from prepare');
  });
});

describe('--resume', () => {
  /** A run on a journal in `stateDir`; `failAt` makes that phase's gate stop the run (an interruption). */
  async function journaled(phases: Phase[], stateDir: string, resume: boolean) {
    const f = fixture({ check: false, hosts: H });
    const journal = new Journal(stateDir, `run-${Date.now()}`, { resume, now: new Date() });
    let error: unknown;
    try {
      await runPhases({ phases, ctx: f.ctx, summary: emptySummary(false), journal });
      journal.finish();
    } catch (err) {
      error = err;
      journal.save();
    }
    return { ...f, error };
  }

  it('skips the hosts a stopped run completed, but runs a proving phase (verify) again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    const stateDir = mkdtempSync(join(tmpdir(), 'journal-'));
    const proofs: string[] = [];
    let interrupted = true;
    const proving: Phase = {
      id: 'verify',
      title: 'prove',
      needs: ['files'],
      hosts: () => H.slice(0, 1),
      concurrency: 'serial',
      steps: [],
      rerunsOnResume: true,
      gates: [{ id: 'proof', title: 'proof', budgetMs: 5_000, readOnly: true, run: async (h) => void proofs.push(h.name) }],
    };
    const after: Phase = {
      id: 'after',
      title: 'after',
      needs: ['verify'],
      hosts: () => H.slice(0, 1),
      concurrency: 1,
      steps: [],
      gates: [
        {
          id: 'late',
          title: 'late',
          budgetMs: 5_000,
          run: async (h) => {
            if (interrupted) throw new CauseError('GATE_FAILED', { host: h.name, evidence: { seen: 'interrupted' } });
          },
        },
      ],
    };
    const first = await journaled([filePhase(dir), proving, after], stateDir, false);
    expect((first.error as CauseError).evidence.seen).toBe('interrupted');
    expect(proofs).toEqual(['h1']);

    interrupted = false;
    const resumed = await journaled([filePhase(dir), proving, after], stateDir, true);
    expect(resumed.error).toBeUndefined();
    const steps = resumed.events.filter((e) => e.type === 'step-end');
    expect(steps.map((e) => [e.host, (e as { status: string }).status])).toEqual([
      ['h1', 'skipped'],
      ['h2', 'skipped'],
    ]);
    expect(proofs).toEqual(['h1', 'h1']);
    expect(resumed.events.some((e) => e.type === 'gate-end' && e.gate === 'proof' && e.status === 'ok')).toBe(true);
  });
});

describe('a stop of several hosts at once', () => {
  // A preflight probe on h1 hits a bug (the remote throws a TypeError) while h2's probe fails with a named
  // cause: the run must surface the bug, never a cause that hides it, nor an empty CauseErrors.
  const preflightPhase = (): Phase => ({
    id: 'pre',
    title: 'pre',
    needs: [],
    hosts: () => H,
    concurrency: 4,
    steps: [],
    preflight: { probe: () => ({ x: { command: 'true' } }), check: () => [] },
  });

  function breakRemote(f: ReturnType<typeof fixture>, name: string, err: unknown) {
    const remote = f.remotes.get(name)!;
    remote.exec = async () => {
      throw err;
    };
  }

  it('surfaces a bug on one host although another host stopped with a cause', async () => {
    const f = fixture({ check: false, hosts: H });
    breakRemote(f, 'h1', new TypeError('cannot read properties of undefined'));
    breakRemote(f, 'h2', new CauseError('SSH_UNREACHABLE', { host: 'h2' }));
    const error = await runPhases({ phases: [preflightPhase()], ctx: f.ctx, summary: emptySummary(false) }).then(
      () => undefined,
      (e) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe('cannot read properties of undefined');
  });

  it('surfaces the first bug when every host hit one (not an empty CauseErrors)', async () => {
    const f = fixture({ check: false, hosts: H });
    breakRemote(f, 'h1', new RangeError('first'));
    breakRemote(f, 'h2', new RangeError('second'));
    const error = await runPhases({ phases: [preflightPhase()], ctx: f.ctx, summary: emptySummary(false) }).then(
      () => undefined,
      (e) => e,
    );
    expect(error).toBeInstanceOf(RangeError);
    expect(['first', 'second']).toContain((error as Error).message);
  });

  it('names every host when all stopped with causes', async () => {
    const f = fixture({ check: false, hosts: H });
    breakRemote(f, 'h1', new CauseError('SSH_UNREACHABLE', { host: 'h1' }));
    breakRemote(f, 'h2', new CauseError('SSH_UNREACHABLE', { host: 'h2' }));
    const error = await runPhases({ phases: [preflightPhase()], ctx: f.ctx, summary: emptySummary(false) }).then(
      () => undefined,
      (e) => e,
    );
    expect(error).toBeInstanceOf(CauseErrors);
    expect((error as CauseErrors).errors.map((e) => e.host).sort()).toEqual(['h1', 'h2']);
  });
});
