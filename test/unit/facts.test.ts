// Typed facts (src/engine/facts.ts): host facts by key as the journal keeps them, run facts, the one
// computation a run shares between prepares, and a missing guaranteed fact named as a bug.
import { describe, expect, it } from 'vitest';
import { Facts, hostFact, hostRecord, runFact } from '../../src/engine/facts.ts';

const cursor = hostFact<string>('journalCursor');
const changed = hostFact<boolean>('k3sConfigChanged');
const rendered = runFact<{ manifest: string }>('test.rendered');

describe('facts', () => {
  it('keeps host facts per host, under their keys (what the journal stores and a resume gives back)', () => {
    const facts = new Facts();
    facts.setHost('h1', [cursor('s=1'), changed(true)]);
    expect(facts.get('h1', cursor)).toBe('s=1');
    expect(facts.get('h2', cursor)).toBeUndefined();
    expect(hostRecord([cursor('s=1'), changed(false)])).toEqual({ journalCursor: 's=1', k3sConfigChanged: false });
    const resumed = new Facts();
    resumed.setHostRecord('h1', JSON.parse(JSON.stringify(hostRecord([cursor('s=2')]))));
    expect(resumed.get('h1', cursor)).toBe('s=2');
  });

  it('reads a run fact, and names one that was never set when it is needed', () => {
    const facts = new Facts();
    expect(facts.run(rendered)).toBeUndefined();
    expect(() => facts.need(rendered)).toThrow('run fact test.rendered was read before it was set');
    expect(() => facts.need('h1', cursor)).toThrow('host fact journalCursor of h1 was read before it was set');
    facts.setRun([rendered({ manifest: 'm' })]);
    expect(facts.need(rendered)).toEqual({ manifest: 'm' });
  });

  it('computes a run fact once, whoever asks first, and gives every caller the same failure', async () => {
    const facts = new Facts();
    let calls = 0;
    const compute = async () => ({ manifest: `render ${++calls}` });
    const [a, b] = await Promise.all([facts.once(rendered, compute), facts.once(rendered, compute)]);
    expect(await facts.once(rendered, compute)).toBe(a);
    expect([a, b, calls]).toEqual([{ manifest: 'render 1' }, { manifest: 'render 1' }, 1]);
    expect(facts.need(rendered)).toBe(a);
    const failing = new Facts();
    const boom = new Error('unresolved');
    let tries = 0;
    const fail = async () => {
      tries++;
      throw boom;
    };
    await expect(failing.once(rendered, fail)).rejects.toBe(boom);
    await expect(failing.once(rendered, fail)).rejects.toBe(boom);
    expect(tries).toBe(1);
    expect(failing.run(rendered)).toBeUndefined();
  });
});
