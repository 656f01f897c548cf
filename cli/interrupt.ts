// Ctrl-C, the same for every command that runs a session: the first cancels (the command under way is
// stopped, the journal is written and every host lock released before the process ends), the second
// exits at once. Both end with exit 130, the shell's code for "stopped by SIGINT".
import type { Io } from './io.ts';

export const EXIT_INTERRUPTED = 130;

export function onFirstAndSecondInterrupt(io: Io, abort: AbortController, exit: (code: number) => never = process.exit): () => void {
  let interrupts = 0;
  return () => {
    interrupts++;
    if (interrupts === 1) {
      io.err('interrupt: finishing the current command, releasing locks (Ctrl-C again to exit at once)');
      abort.abort(new Error('interrupted'));
    } else {
      exit(EXIT_INTERRUPTED);
    }
  };
}
