// `bootstrap <env>`: load and check everything that can be checked without a connection, then run
// the session with the chosen view. Ctrl-C once: cancel cleanly (locks released, journal kept);
// twice: exit at once.
import { existsSync } from 'node:fs';
import { EXIT_WOULD_CHANGE, UsageError, causesOf, stopOf } from '../errors.ts';
import { systemClock, type Clock } from '../engine/clock.ts';
import { selectPhases } from '../engine/dag.ts';
import { validatedOrder, allPhases } from '../../phases/index.ts';
import type { EngineEvent } from '../engine/events.ts';
import type { HostRef, Phase } from '../engine/phase.ts';
import { knownSecrets } from './known-secrets.ts';
import { EXIT_INTERRUPTED, onFirstAndSecondInterrupt } from './interrupt.ts';
import { runSession } from '../engine/session.ts';
import { ensureStateDir, stateDirFor } from '../engine/state-dir.ts';
import { checkArtifacts } from '../inventory/artifacts.ts';
import { loadInventory, type LoadedInventory } from '../inventory/load.ts';
import type { Remote, SshTarget, Transport } from '../transport/types.ts';
import { kubeconfigPath } from '../k3s/kubeconfig-file.ts';
import { allHostRefs } from '../inventory/hosts.ts';
import { lastBuiltPhase, restorePhases } from '../../phases/k3s/restore-mode.ts';
import { resolveBackup } from '../backup/store.ts';
import { replacePlan } from '../../phases/k3s/replace-run.ts';
import { jsonRenderer } from '../view/json.ts';
import { listrRenderer } from '../view/listr.ts';
import { plainRenderer } from '../view/plain.ts';
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
  /** `--replace <server>`: delete, wipe and rejoin that server (phases/k3s/replace-*.ts). */
  replace?: string;
  /** `--restore <backup>`: rebuild from a backup (phases/k3s/restore-*.ts). */
  restore?: string;
}

export interface RunDeps {
  transport: Transport;
  target: (loaded: LoadedInventory, host: HostRef) => SshTarget;
  preflight?: (remote: Remote) => Promise<void>;
  clock: Clock;
  phases: Phase[];
  /** Listens for SIGINT; returns a function that stops listening. */
  onInterrupt: (handler: () => void) => () => void;
}

export function defaultRunDeps(): RunDeps {
  const config = operatorSshConfig();
  return {
    transport: defaultTransport(config),
    target: (loaded, host) => sshTarget(loaded, host, config),
    preflight: defaultPreflight,
    clock: systemClock,
    phases: allPhases(),
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  };
}

export async function runCommand(args: RunArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const loaded = await loadInventory(args.file);
  const env = loaded.inventory.environment;
  if (args.env && args.env !== env) throw new UsageError(`${args.file} describes environment ${env}, not ${args.env}`);
  const replace = args.replace === undefined ? undefined : replacePlan(loaded, args.replace);
  // A restore is the same DAG with the k3s phases in restore mode.
  const restore = args.restore === undefined ? undefined : resolveBackup(args.restore, stateDirFor(env, io.env));
  const ordered = validatedOrder(restore ? restorePhases(deps.phases, restore) : deps.phases);
  // A recovery (restore, replace) converges what is built: it does not wait for phases still to come.
  const until = args.until ?? (restore || replace ? lastBuiltPhase(ordered) : undefined);
  const selected = selectPhases(ordered, { from: args.from, only: args.only, until });
  // A replace may move the founder role to a surviving server for the k3s phases of this run.
  const phases = replace ? replace.phases(selected) : selected;
  if (replace && !phases.some((p) => p.id === 'k3s-join')) throw new UsageError('--replace deletes, wipes and rejoins the server in k3s-join: select it (--until k3s-join or later)');
  const pending = phases.filter((p) => p.pending);
  if (pending.length) {
    const built = phases.filter((p) => !p.pending).map((p) => p.id);
    throw new UsageError(
      `phase${pending.length > 1 ? 's' : ''} ${pending.map((p) => p.id).join(', ')}: ${pending[0].pending}` +
        (built.length ? `; select the built ones with --until ${built.at(-1)}` : ''),
    );
  }
  const missing = checkArtifacts(loaded.derived);
  if (missing.length) throw stopOf(missing);

  const view = chooseView(args.json, io);
  for (const w of loaded.warnings) view.emit({ type: 'warning', message: `${w.path}: ${w.message}` });
  if ((restore || replace) && !args.until && until !== ordered.at(-1)!.id) view.emit({ type: 'warning', message: `the ${restore ? 'restore' : 'replace'} ends at ${until}: ${ordered.filter((p) => p.pending).map((p) => p.id).join(', ')} not built yet` });

  const abort = new AbortController();
  const stopListening = deps.onInterrupt(onFirstAndSecondInterrupt(io, abort));
  try {
    const stateDir = ensureStateDir(stateDirFor(env, io.env));
    const result = await runSession(
      { transport: deps.transport, clock: deps.clock, emit: view.emit, signal: abort.signal, preflight: deps.preflight },
      {
        env,
        inventory: loaded,
        phases,
        hosts: allHostRefs(loaded),
        target: (h) => deps.target(loaded, h),
        check: args.check,
        resume: args.resume,
        stateDir,
        secrets: knownSecrets(stateDir, loaded),
        waivers: loaded.derived.waivers,
        ...(replace && { replace: replace.server, precheck: replace.precheck }),
      },
    );
    await view.finish();
    if (!result.error && !args.json) bastionNote(loaded, stateDir, io);
    if (result.error) {
      const causes = causesOf(result.error);
      if (causes.some((c) => c.causeId === 'INTERRUPTED')) return EXIT_INTERRUPTED;
      if (causes.length) return 1;
      throw result.error; // a bug: main prints its stack
    }
    return args.check && result.summary.wouldChange > 0 ? EXIT_WOULD_CHANGE : 0;
  } finally {
    stopListening();
  }
}

/** Behind a bastion the fetched kubeconfig's VIP is out of the operator's reach: say where the way in is written. */
function bastionNote(loaded: LoadedInventory, stateDir: string, io: Io): void {
  const jump = loaded.derived.bastion;
  const file = kubeconfigPath(stateDir);
  if (!jump || !existsSync(file)) return;
  io.out(`kubeconfig: ${file} (the API is behind the bastion ${jump.host}; the tunnel to open and how to dial it are at the top of the file)`);
}

function chooseView(json: boolean, io: Io): { emit: (e: EngineEvent) => void; finish: () => Promise<void> } {
  if (json) return { emit: jsonRenderer(io.out), finish: async () => undefined };
  const ci = io.env.CI === 'true' || io.env.CI === '1';
  if (io.isTTY && !ci) return listrRenderer(io.out);
  return { emit: plainRenderer(io.out), finish: async () => undefined };
}
