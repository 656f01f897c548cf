// Ctrl-C, the same for every command that runs a session: the first cancels (the command under way is
// stopped, the journal is written and every host lock released before the process ends), the second
// exits at once. Both end with exit 130, the shell's code for "stopped by SIGINT".
import type { Io } from './io.ts';

export const EXIT_INTERRUPTED = 130;

/** `why`: what stopped the run when it was not Ctrl-C (the output's reader gone). */
export function onFirstAndSecondInterrupt(io: Io, abort: AbortController, exit: (code: number) => never = process.exit): (why?: string) => void {
  let interrupts = 0;
  return (why?: string) => {
    interrupts++;
    if (interrupts === 1) {
      io.err(`interrupt${why ? ` (${why})` : ''}: finishing the current command, releasing locks (Ctrl-C again to exit at once)`);
      abort.abort(new Error('interrupted'));
    } else {
      exit(EXIT_INTERRUPTED);
    }
  };
}

/** What a run listens on for an interrupt: the process (SIGINT) and its output stream. */
interface InterruptSources {
  signals: NodeJS.EventEmitter;
  output: NodeJS.EventEmitter;
}

/**
 * Calls `handler` at every SIGINT, and once when the output loses its reader (`bootstrap … --json | head`
 * closes the pipe: EPIPE), so that the run stops as at a first Ctrl-C, its host locks released, instead of
 * dying on its next write with them held. Every later write error of the closed output is ignored; any
 * other output error is thrown, as it was without a listener. Returns a function that stops listening.
 */
export function listenForInterrupts(handler: (why?: string) => void, from: InterruptSources = { signals: process, output: process.stdout }): () => void {
  let gone = false;
  const onSigint = () => handler();
  const onOutputError = (err: NodeJS.ErrnoException) => {
    if (gone) return;
    if (err.code !== 'EPIPE') throw err;
    gone = true;
    handler('the reader of the output went away');
  };
  from.signals.on('SIGINT', onSigint);
  from.output.on('error', onOutputError);
  return () => {
    from.signals.off('SIGINT', onSigint);
    // Still listening once gone: the closed output keeps failing every write until the process ends.
    if (!gone) from.output.off('error', onOutputError);
  };
}
