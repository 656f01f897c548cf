// `bootstrap verify <env> [--drill]`: a run of the verify phase alone.
// Without --drill it only reads, so it runs as a check-mode session: no lock is taken (it may run next to
// a build, or while an operator investigates) and no journal is written. The drill stops k3s on the VIP
// holder, so `--drill` runs as a normal session: it takes every host's lock (it must not race a build)
// and check mode never runs it.
import { verifyPhase } from '../../phases/verify.ts';
import type { Io } from './io.ts';
import { defaultRunDeps, runCommand, type RunDeps } from './run-command.ts';

export interface VerifyArgs {
  file: string;
  env?: string;
  drill: boolean;
  json: boolean;
}

export function verifyCommand(args: VerifyArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const phases = deps.phases.map((p) => (p.id === 'verify' ? verifyPhase({ drill: args.drill, standalone: true }) : p));
  return runCommand({ file: args.file, env: args.env, check: !args.drill, only: 'verify', resume: false, json: args.json }, io, { ...deps, phases });
}
