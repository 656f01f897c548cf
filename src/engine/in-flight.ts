// The remote commands of a run that have started and not yet ended, each with the wait that started it: a
// gate whose look is still waiting for a host when its budget and grace have run out names the command it
// waits for (GATE_LOOK_HUNG), instead of saying only that it did not end. A command belongs to the wait
// within whose asynchronous scope it was started (node:async_hooks AsyncLocalStorage follows awaits and
// callbacks); one the wait merely joined (an answer another step asked for) belongs to that step.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Running {
  host: string;
  /** The command as the run log shows it (redacted), or words in place of one that holds a secret. */
  line: string;
  /** When it started (the run's clock, ms). */
  since: number;
}

interface Entry extends Running {
  owner: object | undefined;
}

/** In place of a command that holds a secret: its words are never shown, not even redacted. */
const WITHHELD = '(withheld: the command holds a secret)';

export class InFlight {
  private readonly running = new Set<Entry>();
  private readonly scope = new AsyncLocalStorage<object>();

  constructor(
    private readonly now: () => number,
    private readonly redact: (text: string) => string = (t) => t,
  ) {}

  /** CommandLog.started: the command is in flight until the function returned is called. */
  readonly started = (host: string, command: string, secret?: boolean): (() => void) => {
    const entry: Entry = {
      host,
      line: secret ? WITHHELD : this.redact(command),
      since: this.now(),
      owner: this.scope.getStore(),
    };
    this.running.add(entry);
    return () => this.running.delete(entry);
  };

  /** Runs `fn` as `owner`: the commands it starts, however deep, are owner's. */
  within<T>(owner: object, fn: () => Promise<T>): Promise<T> {
    return this.scope.run(owner, fn);
  }

  /** What `owner` is still waiting for, the longest-running first; none of its own: whatever runs on `host`. */
  waitedFor(owner: object, host: string): Running[] {
    const all = [...this.running].sort((a, b) => a.since - b.since);
    const own = all.filter((e) => e.owner === owner);
    return (own.length ? own : all.filter((e) => e.host === host)).map(({ host: h, line, since }) => ({ host: h, line, since }));
  }
}
