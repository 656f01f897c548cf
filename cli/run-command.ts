// `bootstrap <env>`: load the inventory, let the mode assemble the run (modes/: a build, a restore or a
// replace), then run the session with the chosen view. Ctrl-C once: cancel cleanly (locks released,
// journal kept); twice: exit at once.
import { EXIT_WOULD_CHANGE, UsageError, causesOf } from '../src/errors.ts';
import { systemClock, type Clock } from '../src/engine/clock.ts';
import type { EngineEvent } from '../src/engine/events.ts';
import type { HostRef } from '../src/engine/phase.ts';
import { runSession, type RunPlan, type SessionDeps } from '../src/engine/session.ts';
import { ensureStateDir, stateDirFor } from '../src/engine/state-dir.ts';
import { loadInventory, type LoadedInventory } from '../src/inventory/load.ts';
import type { Remote, SshTarget, Transport } from '../src/transport/types.ts';
import { backupId, resolveBackup } from '../src/backup/store.ts';

import { apiGetOf } from '../src/kube/api-read.ts';
import { jsonRenderer } from '../src/view/json.ts';
import { listrRenderer } from '../src/view/listr.ts';
import { plainRenderer } from '../src/view/plain.ts';
import { buildRun, kubeconfigNote } from '../modes/build.ts';
import { replaceRun } from '../modes/replace.ts';
import { restoreRun } from '../modes/restore.ts';
import { removeRun } from '../modes/remove.ts';
import { knownSecrets } from './known-secrets.ts';
import { EXIT_INTERRUPTED, listenForInterrupts, onFirstAndSecondInterrupt } from './interrupt.ts';
import type { Io } from './io.ts';
import { defaultTransport, defaultPreflight, operatorSshConfig, sshTarget } from './transport-defaults.ts';

export interface RunArgs {
  file: string;
  env?: string;
  check: boolean;
  from?: string;
  only?: string;
  until?: string;
  resume: boolean;
  json: boolean;
  /** `--replace <server>`: delete, wipe and rejoin that server (modes/replace.ts). */
  replace?: string;
  /** `--restore <backup>`: rebuild from a backup (modes/restore.ts). */
  restore?: string;
  /** `--no-backup`: a rolling change takes no backup first. */
  noBackup?: boolean;
  /** `--remove <names>`: take those nodes out of the cluster (modes/remove.ts). */
  remove?: string[];
  /** `--allow-even`: an even server count passes. */
  allowEven?: boolean;
}

export interface RunDeps {
  transport: Transport;
  target: (loaded: LoadedInventory, host: HostRef) => SshTarget;
  preflight?: (remote: Remote) => Promise<void>;
  /** Probes that read the API asked through the SSH connections (src/kube/api-read.ts); absent: on the hosts. */
  apiGet?: SessionDeps['apiGet'];
  clock: Clock;
  /** Listens for SIGINT (and the output's reader going away: cli/interrupt.ts); returns a function that stops listening. */
  onInterrupt: (handler: (why?: string) => void) => () => void;
}

export function defaultRunDeps(): RunDeps {
  const config = operatorSshConfig();
  return {
    transport: defaultTransport(config),
    target: (loaded, host) => sshTarget(loaded, host, config),
    preflight: defaultPreflight,
    apiGet: apiGetOf,
    clock: systemClock,
    onInterrupt: (handler) => listenForInterrupts(handler),
  };
}

/** The inventory of `file`, refused when it describes another environment than the one named. */
export async function loadFor(file: string, env: string | undefined, allowEven = false): Promise<LoadedInventory> {
  const loaded = await loadInventory(file, { allowEven });
  if (env && env !== loaded.inventory.environment) throw new UsageError(`${file} describes environment ${loaded.inventory.environment}, not ${env}`);
  return loaded;
}

export async function runCommand(args: RunArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  // A removal judges the servers that stay, not the inventory's count (modes/remove.ts).
  const loaded = await loadFor(args.file, args.env, args.allowEven === true || args.remove !== undefined);
  const sel = { from: args.from, only: args.only, until: args.until, check: args.check, resume: args.resume };
  const plan = args.remove
    ? removeRun(loaded, args.remove, { check: args.check, allowEven: args.allowEven === true })
    : args.replace !== undefined
      ? replaceRun(loaded, args.replace, sel)
      : args.restore !== undefined
        ? restoreRun(loaded, resolveBackup(args.restore, stateDirFor(loaded.inventory.environment, io.env)), sel)
        : buildRun(loaded, sel, { backup: !args.noBackup, backupId: backupId(new Date(deps.clock.now())) });
  return runPlanned(loaded, plan, args.json, io, deps);
}

/** Runs a mode's plan with the chosen view; the exit code says how it ended. */
export async function runPlanned(loaded: LoadedInventory, plan: RunPlan, json: boolean, io: Io, deps: RunDeps): Promise<number> {
  const env = loaded.inventory.environment;
  const view = chooseView(json, io);
  const abort = new AbortController();
  const stopListening = deps.onInterrupt(onFirstAndSecondInterrupt(io, abort));
  try {
    const stateDir = ensureStateDir(stateDirFor(env, io.env));
    const result = await sessionOf(loaded, plan, stateDir, view.emit, abort.signal, deps);
    await view.finish();
    const note = !result.error && !json ? kubeconfigNote(loaded, stateDir) : undefined;
    if (note) io.out(note);
    if (result.error) return exitOfStop(result.error);
    return plan.check && result.summary.wouldChange > 0 ? EXIT_WOULD_CHANGE : 0;
  } finally {
    stopListening();
  }
}

/** One session of a mode's plan, on the chosen view's events; `signal` is the operator's Ctrl-C. */
export function sessionOf(loaded: LoadedInventory, plan: RunPlan, stateDir: string, emit: (e: EngineEvent) => void, signal: AbortSignal, deps: RunDeps) {
  return runSession(
    { transport: deps.transport, clock: deps.clock, emit, signal, preflight: deps.preflight, apiGet: deps.apiGet },
    {
      env: loaded.inventory.environment,
      inventory: loaded,
      target: (h) => deps.target(loaded, h),
      stateDir,
      secrets: knownSecrets(stateDir, loaded),
      waivers: loaded.derived.waivers,
      plan,
    },
  );
}

/** The exit code of a session that stopped: 130 when interrupted, 1 for named causes; a bug is thrown (main prints its stack). */
export function exitOfStop(error: unknown): number {
  const causes = causesOf(error);
  if (causes.some((c) => c.causeId === 'INTERRUPTED')) return EXIT_INTERRUPTED;
  if (causes.length) return 1;
  throw error;
}

function chooseView(json: boolean, io: Io): { emit: (e: EngineEvent) => void; finish: () => Promise<void> } {
  if (json) return { emit: jsonRenderer(io.out), finish: async () => undefined };
  const ci = io.env.CI === 'true' || io.env.CI === '1';
  if (io.isTTY && !ci) return listrRenderer(io.out);
  return { emit: plainRenderer(io.out), finish: async () => undefined };
}
