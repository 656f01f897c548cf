// The remote commands of a run that have started and not yet ended: a gate whose look is still waiting for a
// host when its budget and grace have run out names the command it waits for (GATE_LOOK_HUNG), instead of
// saying only that it did not end. The commands are not tagged with the wait that started them (an
// AsyncLocalStorage would: it costs every promise of the run a hook on Node 20); the gate takes those that
// started since it did, and any on its own host: a command older than its budget that is still running is
// what it waits for, or what holds up the host it waits on.
export interface Running {
  host: string;
  /** The command's line or, when the transport was told one, its words (ExecOptions.what), redacted; withheld when it holds a secret. */
  line: string;
  /** When it started (the run's clock, ms). */
  since: number;
}

/** In place of a command that holds a secret: its words are never shown, not even redacted. */
const WITHHELD = '(withheld: the command holds a secret)';

export class InFlight {
  private readonly running = new Set<Running>();

  constructor(
    private readonly now: () => number,
    private readonly redact: (text: string) => string = (t) => t,
  ) {}

  /**
   * CommandLog.started: the command is in flight until the function returned is called. Kept as it came: it is
   * redacted only when a gate names it (every command passes here, hardly any is ever named).
   */
  readonly started = (host: string, command: string, secret?: boolean): (() => void) => {
    const entry: Running = { host, line: secret ? WITHHELD : command, since: this.now() };
    this.running.add(entry);
    return () => this.running.delete(entry);
  };

  /**
   * What a wait that began at `since` on `host` may be waiting for, the longest-running first: those running
   * for `forMs` at least (a wait stuck on a command has waited that long; a short one in passing, a lock's
   * heartbeat, is not it).
   */
  waitedFor(host: string, since: number, forMs: number): Running[] {
    const now = this.now();
    return [...this.running]
      .filter((e) => (e.since >= since || e.host === host) && now - e.since >= forMs)
      .sort((a, b) => a.since - b.since)
      .map((e) => ({ ...e, line: this.redact(e.line) }));
  }
}
