// The answers the run's read-only probes gave, reused while nothing can have changed them. A converged run
// asks the same things many times (whether k3s is active, the sums of its binary and image archives, whether
// etcd's folder is there: every phase that cares asks), and one phase's probes can be asked before it starts
// (src/engine/prefetch.ts): each answer costs a remote execution, the largest part of a converged run.
//
// What may change a host is the run's own doing or time passing, so the memo forgets everything:
// - before and after every applied plan (src/engine/run.ts), on any host: one host's change can change what
//   another's probe sees (a joined server, a written manifest);
// - before and after every remote command not marked read-only (a drill's `systemctl stop`, a reconcile
//   request): it may change something, whatever phase sent it;
// - at every pause of the run's clock: a gate that waits is waiting for the world to change.
// An answer whose batch was sent before a forget is not kept: it may be from before the change.
// Anything else can change a host too (another operator, k3s itself); a probe read a moment later could not
// rule that out either: a plan is always made from a snapshot.
import type { Remote } from '../transport/types.ts';
import type { Clock } from './clock.ts';
import type { HostRef } from './host-ref.ts';
import type { ProbeCommand, ProbeResult } from './probe-types.ts';

/** What tells one probe from another on a host: its command and whether it runs through sudo. */
export function probeIdentity(cmd: ProbeCommand): string {
  return `${cmd.sudo ? 'sudo' : ''}\0${cmd.command}`;
}

export class ProbeMemo {
  private readonly answers = new Map<string, ProbeResult>();
  /** Probes asked and not answered yet, with the generation they were sent in. */
  private readonly pending = new Map<string, { mark: number; answer: Promise<ProbeResult | undefined> }>();
  private generation = 0;

  private static key(host: HostRef, cmd: ProbeCommand): string {
    return `${host.name}\0${probeIdentity(cmd)}`;
  }

  /**
   * The answer this command gave on this host since the last forget; when a batch sent since is still asking
   * it, that batch's answer to come (undefined when none comes or it was forgotten meanwhile: the answer
   * may be from before the change). Undefined: it is to be asked.
   */
  find(host: HostRef, cmd: ProbeCommand): ProbeResult | Promise<ProbeResult | undefined> | undefined {
    const key = ProbeMemo.key(host, cmd);
    const known = this.answers.get(key);
    if (known) return known;
    const asked = this.pending.get(key);
    if (!asked || asked.mark !== this.generation) return undefined;
    return asked.answer.then((answer) => (asked.mark === this.generation ? answer : undefined));
  }

  /** A mark to give `keep`: answers of a batch are kept only when nothing was forgotten since it was sent. */
  mark(): number {
    return this.generation;
  }

  /** `cmd` is being asked on `host` by a batch sent now; `answer` settles with its answer (undefined: none). */
  asking(host: HostRef, cmd: ProbeCommand, answer: Promise<ProbeResult | undefined>): void {
    const key = ProbeMemo.key(host, cmd);
    const entry = { mark: this.generation, answer };
    this.pending.set(key, entry);
    void answer.finally(() => {
      if (this.pending.get(key) === entry) this.pending.delete(key);
    });
  }

  keep(mark: number, host: HostRef, cmd: ProbeCommand, answer: ProbeResult): void {
    // A batch cut short (a probe the batch did not reach) is no answer to keep.
    if (mark !== this.generation || answer.code === null) return;
    this.answers.set(ProbeMemo.key(host, cmd), answer);
  }

  forget(): void {
    this.generation++;
    this.answers.clear();
    this.pending.clear();
  }
}

/** `remote` as the run's phases use it: a command not marked read-only makes the memo forget, before and after. */
export function forgettingRemote(remote: Remote, memo: ProbeMemo): Remote {
  return {
    host: remote.host,
    exec: async (command, opts) => {
      if (opts?.readOnly) return remote.exec(command, opts);
      memo.forget();
      try {
        return await remote.exec(command, opts);
      } finally {
        memo.forget();
      }
    },
    ...(remote.forward && { forward: (host: string, port: number) => remote.forward!(host, port) }),
    close: () => remote.close(),
  };
}

/** `clock` as the run's phases use it: a pause makes the memo forget (a wait is for the world to change). */
export function forgettingClock(clock: Clock, memo: ProbeMemo): Clock {
  return {
    now: () => clock.now(),
    sleep: (ms, signal) => {
      memo.forget();
      return clock.sleep(ms, signal);
    },
  };
}
