// A RunContext over LocalRemote hosts, for engine tests: real shell, real files, no SSH.
import type { EngineContext, RunContext, Topology } from '../../src/engine/context.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import { topologyOf } from '../../src/inventory/hosts.ts';
import type { Remote } from '../../src/transport/types.ts';
import { Facts } from '../../src/engine/facts.ts';
import { systemClock } from '../../src/engine/clock.ts';
import type { EngineEvent } from '../../src/engine/events.ts';
import type { HostRef, Phase, ProbeCommand, ProbeResults } from '../../src/engine/phase.ts';
import { LocalRemote } from './local-remote.ts';
import type { runSession } from '../../src/engine/session.ts';
import { LOCK_DIR } from '../../src/engine/lock.ts';
import type { ExecOptions, Transport } from '../../src/transport/types.ts';
import { join } from 'node:path';

/**
 * A run's context over a loaded inventory (environment `prod`), for a step's local work and plan: no transport
 * unless `remote` is given, facts computed as asked.
 */
export function inventoryContext(inventory: LoadedInventory, o: { stateDir: string; check?: boolean; remote?: (h: HostRef) => Remote }): RunContext {
  return {
    env: 'prod',
    check: o.check ?? false,
    inventory,
    remote: o.remote ?? (() => undefined as never),
    clock: systemClock,
    emit: () => undefined,
    signal: new AbortController().signal,
    stateDir: o.stateDir,
    facts: new Facts(),
    once: (_f, compute) => compute(),
    redact: () => undefined,
    topology: topologyOf(inventory),
  };
}

export function hosts(...names: string[]): HostRef[] {
  return names.map((name, i) => ({ name, address: `10.0.0.${10 + i}`, role: 'server', founder: i === 0 }));
}

/** A phase of one read-only step on `on`, both hosts at once: it asks `probe` and hands what it saw to `saw`. */
export function lookPhase(on: HostRef[], probe: Record<string, ProbeCommand>, saw: (host: HostRef, probe: ProbeResults) => void = () => undefined): Phase {
  return {
    id: 'look',
    title: 'a look',
    needs: [],
    hosts: () => on,
    concurrency: 2,
    steps: [
      {
        id: 'look',
        title: 'look',
        probe: () => probe,
        plan: ({ host, probe: seen }) => {
          saw(host, seen);
          return { changes: [] };
        },
      },
    ],
  };
}

/** The hosts' roles as a run sees them: the host marked founder founds, the other servers join it. */
export function topologyFor(all: HostRef[]): Topology {
  const servers = all.filter((h) => h.role === 'server');
  const founder = servers.find((h) => h.founder) ?? servers[0];
  return {
    founder,
    joiners: servers.filter((h) => h !== founder),
    servers,
    agents: all.filter((h) => h.role === 'agent'),
    joinTarget: `https://${founder?.address}:6443`,
  };
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
    topology: topologyFor(opts.hosts),
  };
  return { ctx, remotes, events };
}

/**
 * runSession's options for `phase` on `on` with the state folder `dir`, as a real run of environment `t` would
 * pass them (no inventory file: the phases under test read none).
 */
export function localSessionOptions(dir: string, phase: Phase, on: HostRef[], secrets: string[] = []): Parameters<typeof runSession>[1] {
  return {
    env: 't',
    inventory: {} as never,
    target: (h) => ({ name: h.name, address: h.address, port: 22, user: 'ops', knownHostsFile: '' }),
    stateDir: dir,
    waivers: [],
    secrets,
    plan: { phases: [phase], topology: topologyFor(on), check: false, resume: false },
  };
}

/**
 * A Transport whose hosts are LocalRemotes on this machine (each given the session's run log), the host lock
 * under `dir` instead of /run/lock; `remotes` holds every connection it made, for a test to close them.
 */
export function localTransport(dir: string): { transport: Transport; remotes: LocalRemote[] } {
  const remotes: LocalRemote[] = [];
  const transport: Transport = {
    connect: async (target, opts) => {
      const local = new LocalRemote(target.name, opts?.log);
      remotes.push(local);
      return {
        host: target.name,
        exec: (command: string, o?: ExecOptions) => local.exec(command.split(LOCK_DIR).join(join(dir, 'bootstrap.lock')), o),
        close: () => local.close(),
      };
    },
  };
  return { transport, remotes };
}
