// `bootstrap verify <env> [--drill]`: the verify phase alone, as modes/verify.ts assembles it (a check-mode
// session without --drill; with it, a normal one that takes every host's lock).
import { verifyRun } from '../modes/verify.ts';
import type { Io } from './io.ts';
import { defaultRunDeps, loadFor, runPlanned, type RunDeps } from './run-command.ts';

export interface VerifyArgs {
  file: string;
  env?: string;
  drill: boolean;
  json: boolean;
}

export async function verifyCommand(args: VerifyArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const loaded = await loadFor(args.file, args.env);
  return runPlanned(loaded, verifyRun(loaded, { drill: args.drill }), args.json, io, deps);
}
