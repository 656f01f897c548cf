// A RunContext over LocalRemote hosts, for engine tests: real shell, real files, no SSH.
import type { EngineContext } from '../../src/engine/context.ts';
import { Facts } from '../../src/engine/facts.ts';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { LocalRemote } from './local-remote.ts';

export function hosts(...names: string[]): HostRef[] {
  return names.map((name, i) => ({ name, address: `10.0.0.${10 + i}`, role: 'server', founder: i === 0 }));
}

export function fixture(opts: { check: boolean; hosts: HostRef[] }) {
  const remotes = new Map(opts.hosts.map((h) => [h.name, new LocalRemote(h.name)]));
  const events: EngineEvent[] = [];
  const facts = new Facts();
  const ctx: EngineContext = {
    env: 'test',
    check: opts.check,
    inventory: {} as EngineContext['inventory'],
    remote: (h) => remotes.get(h.name)!,
    clock: systemClock,
    emit: (e) => events.push(e),
    signal: new AbortController().signal,
    stateDir: '/nonexistent',
    facts,
    once: (fact, compute) => facts.once(fact, compute),
    redact: () => undefined,
  };
  return { ctx, remotes, events };
}
