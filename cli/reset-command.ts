// `bootstrap <env> --reset [--node NAME] [--yes] [--check]`: the cluster (or one node) taken down for good
// (modes/reset.ts). Before any host is dialled the operator types the environment's name on the terminal
// (Io.ask); --yes skips that, --check asks nothing (it changes nothing). Without a terminal to ask on and
// without --yes the reset is refused as a usage error.
import { CauseError, UsageError } from '../src/errors.ts';
import { resetHosts, resetRun } from '../modes/reset.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import type { Io } from './io.ts';
import { defaultRunDeps, loadFor, runPlanned, type RunDeps } from './run-command.ts';

/** `bootstrap <env> --reset [--node NAME] [--yes] [--check] [--json]` with the inventory's file. */
export interface ResetArgs {
  file: string;
  env?: string;
  check: boolean;
  json: boolean;
  node?: string;
  yes?: boolean;
}

export async function resetCommand(args: ResetArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const loaded = await loadFor(args.file, args.env);
  const plan = resetRun(loaded, { node: args.node, check: args.check });
  if (!args.check && !args.yes) await confirmReset(loaded, args.node, io);
  return runPlanned(loaded, plan, args.json, io, deps);
}

/** The operator types the environment's name, or the reset stops (RESET_NOT_CONFIRMED) before any host is dialled. */
export async function confirmReset(loaded: LoadedInventory, node: string | undefined, io: Io): Promise<void> {
  const env = loaded.inventory.environment;
  if (!io.ask) throw new UsageError(`--reset asks for the environment's name on a terminal, and stdin is not one: pass --yes to reset ${env} without asking`);
  const hosts = resetHosts(loaded, node);
  const what =
    node === undefined
      ? `the whole cluster of ${env}: k3s, Cilium's datapath and the cluster's data removed from ${hosts.join(', ')} (in that order), for good`
      : `${node} of ${env}: its Node and etcd member taken out of the cluster, k3s, Cilium's datapath and k3s's files removed from it, for good`;
  io.err(`This resets ${what}. The state folder keeps the backups; \`--reset --check\` lists what would be removed.`);
  const answer = await io.ask(`Type the environment's name (${env}) to go on: `);
  if (answer?.trim() === env) return;
  throw new CauseError('RESET_NOT_CONFIRMED', {
    message: answer === undefined ? 'The confirmation was interrupted: nothing changed' : `"${answer.trim()}" is not ${env}: nothing changed`,
    evidence: {
      seen:
        answer === undefined
          ? `the prompt for the environment's name (${env}) was interrupted`
          : `typed "${answer.trim()}", not the environment's name "${env}"`,
    },
  });
}
