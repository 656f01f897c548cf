// A Remote that runs commands on this machine with sh, as the current user (sudo ignored): for unit
// tests of the engine against a real shell and real files, without SSH. It counts executions, and records
// each in a run log when given one, as the SSH transport does (src/transport/command-log.ts). Closing it ends
// the commands still running, as closing an SSH connection ends its channels, so none is recorded after.
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { recordExec } from '../../src/transport/command-log.ts';
import type { CommandLog, ExecOptions, ExecResult, Remote } from '../../src/transport/types.ts';

export class LocalRemote implements Remote {
  execs: { command: string; sudo?: boolean; stdin?: string }[] = [];
  private running = new Map<ReturnType<typeof spawn>, Promise<ExecResult>>();
  constructor(
    readonly host: string,
    private readonly log?: CommandLog,
  ) {}

  exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    this.execs.push({ command, sudo: opts.sudo, stdin: opts.stdin instanceof Readable ? '(stream)' : opts.stdin?.toString() });
    // In flight until it ends, as the SSH transport tells the log (src/transport/ssh.ts exec).
    const ended = this.log?.started?.(this.host, opts.what ?? command, opts.secret);
    const t0 = Date.now();
    const child = spawn('sh', ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'] });
    const done = new Promise<ExecResult>((resolve) => {
      let stdout = '';
      let stderr = '';
      if (opts.stdoutTo) child.stdout.pipe(opts.stdoutTo);
      else child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        const result = { command, stdout, stderr, code: signal ? null : code, durationMs: Date.now() - t0 };
        this.running.delete(child);
        ended?.();
        recordExec(this.log, this.host, result, opts);
        resolve(result);
      });
      child.stdin.on('error', () => undefined); // a command that exits without reading its stdin (EPIPE)
      if (opts.stdin instanceof Readable) opts.stdin.pipe(child.stdin);
      else child.stdin.end(opts.stdin ?? '');
    });
    this.running.set(child, done);
    return done;
  }

  async close(): Promise<void> {
    const running = [...this.running];
    for (const [child] of running) child.kill('SIGKILL');
    await Promise.all(running.map(([, done]) => done));
  }
}
