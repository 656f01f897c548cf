// The lab's own errors. The lab is test infrastructure, not the engine: it does not name causes from the
// catalogue, but a failed command still carries what ran, its exit code and what it said.

/** The lab cannot run here (not root, not Linux). The CLI prints the message as one line. */
export class LabUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabUnavailable';
  }
}

/** A wrong command line or argument (unknown host, unknown fault kind). */
export class LabUsage extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabUsage';
  }
}

/** A command the lab ran on the machine (or in a host) failed. */
export class LabCommandFailed extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly stdout: string,
  ) {
    super(`${command}: exit ${exitCode}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`);
    this.name = 'LabCommandFailed';
  }
}
