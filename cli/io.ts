// Where the CLI writes and what it knows of its terminal: process.stdout/stderr for real, a buffer in tests.
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
  /** Redraws the terminal's current line (a progress bar); only when stderr is a terminal. */
  status?: (line: string) => void;
  /**
   * Asks the operator a question on the terminal and resolves with the line typed (undefined when the prompt
   * was interrupted); only when stdin is a terminal (a reset's confirmation: cli/reset-command.ts).
   */
  ask?: (question: string) => Promise<string | undefined>;
}
