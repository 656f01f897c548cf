// Where the CLI writes and what it knows of its terminal: process.stdout/stderr for real, a buffer in tests.
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
  /** Redraws the terminal's current line (a progress bar); only when stderr is a terminal. */
  status?: (line: string) => void;
}
