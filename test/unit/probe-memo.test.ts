// The run's probe answers asked ahead and reused (src/engine/prefetch.ts, src/engine/probe-memo.ts), through
// the engine's loop on real shells: a converged run asks each host once, when it starts; whatever may have changed a host
// since (a change applied anywhere, a command not marked read-only, a pause of a waiting gate) is asked again.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Gate, Phase } from '../../src/engine/phase.ts';
import { forgettingClock, forgettingRemote, ProbeMemo } from '../../src/engine/probe-memo.ts';
import { emptySummary, runPhases } from '../../src/engine/run.ts';
import { managedFile } from '../../phases/steps/managed-file.ts';
import { fixture, hosts } from '../support/engine-fixture.ts';

const H = hosts('h1', 'h2');

/** A phase of `steps` on both hosts, at once. */
const phaseOf = (id: string, steps: Phase['steps'], gates: Gate[] = []): Phase => ({ id, title: id, needs: [], hosts: () => H, concurrency: 4, steps, gates });

/** A phase whose one step writes `<dir>/<host>.<name>` with `content` (a managed file: probe, plan, apply). */
const writer = (id: string, dir: string, name: string, content: string, gates: Gate[] = []): Phase =>
  phaseOf(
    id,
    [managedFile({ id: 'f', title: name, path: (h) => join(dir, `${h.name}.${name}`), local: async () => undefined, content: () => content, mode: '0644' })],
    gates,
  );

/** A phase whose one step only reads `<dir>/<host>.<name>` and records what it saw. */
const reader = (id: string, dir: string, name: string, seen: Record<string, string>): Phase =>
  phaseOf(id, [
    {
      id: 'read',
      title: `read ${name}`,
      probe: (h) => ({ text: { command: `cat ${join(dir, `${h.name}.${name}`)}` } }),
      plan: ({ host, probe }) => {
        seen[host.name] = probe.text.stdout;
        return { changes: [] };
      },
    },
  ]);

function memoFixture() {
  const f = fixture({ check: false, hosts: H });
  const memo = new ProbeMemo();
  const wrapped = new Map(H.map((h) => [h.name, forgettingRemote(f.remotes.get(h.name)!, memo)]));
  f.ctx.remote = (h) => wrapped.get(h.name)!;
  f.ctx.clock = forgettingClock(f.ctx.clock, memo);
  f.ctx.probeMemo = memo;
  const execs = () => H.map((h) => f.remotes.get(h.name)!.execs.length);
  return { ...f, execs };
}

async function run(f: ReturnType<typeof memoFixture>, phases: Phase[]) {
  const summary = emptySummary(false);
  await runPhases({ phases, ctx: f.ctx, summary });
  return summary;
}

describe("a run's probes asked ahead", () => {
  it("a converged run asks every phase's probes once per host when it starts, then no phase asks again", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memo-'));
    for (const h of H) for (const n of ['a', 'b']) writeFileSync(join(dir, `${h.name}.${n}`), `${n.toUpperCase()}\n`, { mode: 0o644 });
    const seen: Record<string, string> = {};
    const seenB: Record<string, string> = {};
    const f = memoFixture();
    const summary = await run(f, [
      writer('one', dir, 'a', 'A\n'),
      reader('two', dir, 'a', seen),
      writer('three', dir, 'a', 'A\n'),
      reader('four', dir, 'b', seenB),
    ]);
    expect(summary).toMatchObject({ ok: 8, changed: 0 });
    expect(seen).toEqual({ h1: 'A\n', h2: 'A\n' });
    expect(seenB).toEqual({ h1: 'B\n', h2: 'B\n' });
    // Two executions at once per host, whatever the number of phases: every phase's probes asked as the user
    // in one, those asked through sudo (the managed file's) in the other. Each distinct probe once, named as
    // the first phase that asks it names it, after that phase.
    expect(f.execs()).toEqual([2, 2]);
    const batches = f.remotes
      .get('h1')!
      .execs.map((e) => e.stdin ?? '')
      .join('\n');
    expect(
      batches
        .match(/'(one|two|three|four)\.[^']+'/g)
        ?.filter((k, i, all) => all.indexOf(k) === i)
        .sort(),
    ).toEqual(["'four.0.text'", "'one.0.file'", "'two.0.text'"]);
  });

  it('a change applied on one host makes every host ask again: a later phase sees the file the change wrote', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memo-'));
    for (const h of H) writeFileSync(join(dir, `${h.name}.a`), 'old\n', { mode: 0o644 });
    const seen: Record<string, string> = {};
    const f = memoFixture();
    const summary = await run(f, [writer('one', dir, 'a', 'new\n'), reader('two', dir, 'a', seen)]);
    expect(summary).toMatchObject({ changed: 2 });
    expect(seen).toEqual({ h1: 'new\n', h2: 'new\n' });
    expect(readFileSync(join(dir, 'h2.a'), 'utf8')).toBe('new\n');
  });

  it('a gate that pauses (it waits for the world to change) makes the next phase ask again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memo-'));
    for (const h of H) writeFileSync(join(dir, `${h.name}.a`), 'before\n');
    const seen: Record<string, string> = {};
    // Something else changes the files while the gate waits (k3s writing, another operator).
    const waits: Gate = {
      id: 'waits',
      title: 'waits once',
      budgetMs: 5_000,
      run: async (host, ctx) => {
        writeFileSync(join(dir, `${host.name}.a`), 'after\n');
        await ctx.clock.sleep(1);
      },
    };
    const f = memoFixture();
    await run(f, [{ ...reader('one', dir, 'a', {}), gates: [waits] }, reader('two', dir, 'a', seen)]);
    expect(seen).toEqual({ h1: 'after\n', h2: 'after\n' });
  });

  it('a command not marked read-only makes the next phase ask again; a read-only one does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memo-'));
    for (const h of H) writeFileSync(join(dir, `${h.name}.a`), 'before\n');
    const gate = (readOnly: boolean): Gate => ({
      id: 'cmd',
      title: 'runs a command',
      budgetMs: 5_000,
      run: async (host, ctx) => {
        await ctx.remote(host).exec(`echo after > ${join(dir, `${host.name}.a`)}`, { readOnly });
      },
    });
    const changed: Record<string, string> = {};
    await run(memoFixture(), [{ ...reader('one', dir, 'a', {}), gates: [gate(false)] }, reader('two', dir, 'a', changed)]);
    expect(changed).toEqual({ h1: 'after\n', h2: 'after\n' });
    // Marked read-only (wrongly here, to show the mark is what counts): the answer from before is used.
    for (const h of H) writeFileSync(join(dir, `${h.name}.a`), 'before\n');
    const kept: Record<string, string> = {};
    await run(memoFixture(), [{ ...reader('one', dir, 'a', {}), gates: [gate(true)] }, reader('two', dir, 'a', kept)]);
    expect(kept).toEqual({ h1: 'before\n', h2: 'before\n' });
  });

  it('a probe that cannot be built at the start is asked by its phase', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memo-'));
    for (const h of H) writeFileSync(join(dir, `${h.name}.a`), 'A\n');
    const seen: Record<string, string> = {};
    const late = reader('late', dir, 'a', seen);
    // Its probe needs what the first phase's plan decides: not known before the first phase ran.
    let decided = false;
    const probe = late.steps[0].probe!;
    late.steps[0].probe = (h, ctx) => {
      if (!decided) throw new Error('not yet');
      return probe(h, ctx);
    };
    const first: Phase = {
      ...reader('first', dir, 'a', {}),
      steps: [
        {
          id: 'decides',
          title: 'decides',
          plan: () => {
            decided = true;
            return { changes: [] };
          },
        },
      ],
    };
    const f = memoFixture();
    await run(f, [first, late]);
    expect(seen).toEqual({ h1: 'A\n', h2: 'A\n' });
    // Nothing asked ahead (nothing could be built); the late phase asked, once per host.
    expect(f.execs()).toEqual([1, 1]);
    expect(f.remotes.get('h1')!.execs[0].stdin).not.toContain('late.0.text');
    expect(f.remotes.get('h1')!.execs[0].stdin).toContain("'0.text'");
  });
});

describe('ProbeMemo', () => {
  const [h] = H;
  const cmd = { command: 'true' };
  const answer = (stdout: string) => ({ code: 0, stdout, stderr: '' });

  it('keeps no answer of a batch sent before a forget, and none of a probe the batch did not reach', async () => {
    const memo = new ProbeMemo();
    const mark = memo.mark();
    memo.forget();
    memo.keep(mark, h, cmd, answer(''));
    expect(await memo.find(h, cmd)).toBeUndefined();
    memo.keep(memo.mark(), h, cmd, { code: null, stdout: '', stderr: '' });
    expect(await memo.find(h, cmd)).toBeUndefined();
    memo.keep(memo.mark(), h, cmd, answer('x'));
    expect((await memo.find(h, cmd))?.stdout).toBe('x');
    // sudo is part of what was asked
    expect(await memo.find(h, { command: 'true', sudo: true })).toBeUndefined();
  });

  it('a question still being asked is waited for; forgotten meanwhile, it is to be asked again', async () => {
    const memo = new ProbeMemo();
    let settle!: (r: ReturnType<typeof answer>) => void;
    memo.asking(h, cmd, new Promise((r) => (settle = r)));
    const waited = memo.find(h, cmd);
    settle(answer('y'));
    expect((await waited)?.stdout).toBe('y');
    memo.asking(h, cmd, new Promise((r) => (settle = r)));
    const forgotten = memo.find(h, cmd);
    memo.forget();
    settle(answer('z'));
    expect(await forgotten).toBeUndefined();
  });

  it("a phase's look ahead starts with the run's probes, before any phase; in check mode only when its gates only read", async () => {
    const order: string[] = [];
    const gate = (readOnly: boolean): Gate => ({ id: 'g', title: 'g', budgetMs: 1_000, readOnly, run: async () => void order.push('gate') });
    const looking = (id: string, readOnly: boolean): Phase => ({
      ...phaseOf(id, [], [gate(readOnly)]),
      lookAhead: () => void order.push(`${id} looks ahead`),
    });
    // The first phase's gate: it runs once per host after the phase's (here no) steps.
    const watch = (): Phase =>
      phaseOf('first', [], [{ id: 'w', title: 'w', budgetMs: 1_000, readOnly: true, run: async () => void order.push('first phase') }]);
    const f = memoFixture();
    await run(f, [watch(), looking('writes', false), looking('reads', true)]);
    expect(order.slice(0, 3)).toEqual(['writes looks ahead', 'reads looks ahead', 'first phase']);

    order.length = 0;
    const c = memoFixture();
    c.ctx.check = true;
    await runPhases({ phases: [watch(), looking('writes', false), looking('reads', true)], ctx: c.ctx, summary: emptySummary(true) });
    // A gate that waits (not read-only) would not run in check mode: its look ahead would read for nothing.
    expect(order.filter((o) => o.endsWith('looks ahead'))).toEqual(['reads looks ahead']);
  });
});
