// The CLI entry: parse, dispatch, and catch errors ONCE. An expected stop (BootstrapError) prints its
// cause and exits with its code; anything else is a bug and prints its stack (exit 70).
import { basename, resolve } from 'node:path';
import { allCauses } from '../src/causes/catalogue.ts';
import { BootstrapError, InventoryInvalid, causesOf } from '../src/errors.ts';
import { DagInvalid } from '../src/engine/dag.ts';
import { formatStop } from '../src/view/format.ts';
import { USAGE, parseCommand, type Command } from './args.ts';
import type { Io } from './io.ts';

const defaultIo = (): Io => ({
  out: (l) => process.stdout.write(l + '\n'),
  err: (l) => process.stderr.write(l + '\n'),
  isTTY: Boolean(process.stdout.isTTY),
  env: process.env,
  // A progress bar redraws one line of the terminal; not a terminal, nothing is redrawn.
  ...(process.stderr.isTTY && { status: (l: string) => process.stderr.write(`\r\x1b[K${l}`) }),
  ...(process.stdin.isTTY && { ask: askOnTerminal }),
});

/** One line read from the terminal after `question` (on stderr: stdout may be --json's); Ctrl-C resolves undefined. */
async function askOnTerminal(question: string): Promise<string | undefined> {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  return new Promise((resolve) => {
    rl.on('SIGINT', () => {
      rl.close();
      resolve(undefined);
    });
    rl.question(question, (answer) => {
      rl.close();
      resolve(answer);
    });
  });
}

export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  try {
    const cmd = parseCommand(argv);
    return await dispatch(cmd, io);
  } catch (err) {
    // --json is read off argv itself: a command line that does not parse still asked for JSON.
    if (argv.includes('--json')) reportJson(err, io);
    return report(err, io);
  }
}

// Each command's module is imported when it runs (issue 17: startup): `--help` loads the argument parser
// and the error reporting only, `causes` the catalogue, `validate` the schema; the Kubernetes client,
// SSH and the phases load for the commands that use them.
async function dispatch(cmd: Command, io: Io): Promise<number> {
  switch (cmd.kind) {
    case 'help':
      io.out(USAGE);
      return 0;
    case 'causes':
      return causesCommand(cmd.json, io);
    case 'validate':
      return validateCommand(inventoryPath(cmd), cmd.json, io);
    case 'plan': {
      const { planCommand } = await import('./plan-command.ts');
      return planCommand(inventoryPath(cmd), cmd.json, io);
    }
    case 'verify': {
      const { verifyCommand } = await import('./verify-command.ts');
      return verifyCommand({ env: cmd.env, file: inventoryPath(cmd), drill: cmd.drill, json: cmd.json }, io);
    }
    case 'backup': {
      const { backupCommand } = await import('./backup-command.ts');
      return backupCommand({ env: cmd.env, file: inventoryPath(cmd), list: cmd.list, json: cmd.json, server: cmd.server }, io);
    }
    case 'kubeconfig': {
      const { kubeconfigCommand } = await import('./kubeconfig-command.ts');
      return kubeconfigCommand({ ...cmd, file: inventoryPath(cmd) }, io);
    }
    case 'artifacts': {
      const { artifactsCommand } = await import('./artifacts-command.ts');
      return artifactsCommand({ ...cmd, file: inventoryPath(cmd) }, io);
    }
    case 'run': {
      if (cmd.reset) {
        const { resetCommand } = await import('./reset-command.ts');
        return resetCommand({ ...cmd, file: inventoryPath(cmd) }, io);
      }
      const { runCommand } = await import('./run-command.ts');
      return runCommand({ ...cmd, file: inventoryPath(cmd) }, io);
    }
  }
}

/** `--inventory FILE`, else inventory/<env>.yaml in the current folder. */
function inventoryPath(cmd: { env?: string; inventory?: string }): string {
  return resolve(cmd.inventory ?? `inventory/${cmd.env}.yaml`);
}

function causesCommand(json: boolean, io: Io): number {
  const causes = allCauses();
  if (json) {
    io.out(JSON.stringify(causes, null, 2));
    return 0;
  }
  for (const c of causes) {
    io.out(`${c.id}  ${c.title}\n    means:   ${c.meaning}\n    do:      ${c.remedy}\n    runbook: ${c.runbook}`);
  }
  return 0;
}

async function validateCommand(file: string, json: boolean, io: Io): Promise<number> {
  const [{ stripYamlExtension, toValidateJson, validateInventory }, { readInventoryText }, { orJsonRefusal }] = await Promise.all([
    import('../src/inventory/validate.ts'),
    import('../src/inventory/load.ts'),
    import('./json-refusal.ts'),
  ]);
  const read = await orJsonRefusal(json, io, () => readInventoryText(file));
  if ('exit' in read) return read.exit;
  const text = read.value;
  const result = validateInventory(text, stripYamlExtension(basename(file)));
  if (json) {
    io.out(JSON.stringify(toValidateJson(result)));
    return result.ok ? 0 : 65;
  }
  for (const w of result.warnings) io.err(`warning: ${w.path}: ${w.message}`);
  if (!result.ok) throw new InventoryInvalid(file, result.violations);
  io.out(`${file}: ok`);
  return 0;
}

/**
 * With --json every stop is on stdout as JSON too, also one before any session began (an inventory refused,
 * an artifact missing, a usage error): the `stopped` event the session's stream would end with, one per
 * cause. Bugs are not causes: they go to stderr only (with their stack), and stdout stays empty.
 */
function reportJson(err: unknown, io: Io): void {
  const stopped = (error: object) => io.out(JSON.stringify({ type: 'stopped', error }));
  if (err instanceof InventoryInvalid) {
    for (const v of err.violations) stopped({ cause: v.id, message: v.message, path: v.path, file: err.file, runbook: 'runbooks/causes.md' });
  } else if (err instanceof BootstrapError) {
    const causes = causesOf(err);
    if (causes.length) for (const c of causes) stopped(c.toJSON());
    else stopped({ message: err.message, exitCode: err.exitCode });
  }
}

function report(err: unknown, io: Io): number {
  if (err instanceof InventoryInvalid) {
    io.err(`${err.file}: the inventory breaks ${err.violations.length} contract(s):`);
    // Each message starts with its YAML path already (so JSON consumers read it on its own).
    for (const v of err.violations) io.err(`  ${v.id}  ${v.message}`);
    io.err('runbook: runbooks/causes.md');
    return err.exitCode;
  }
  if (err instanceof BootstrapError) {
    const causes = causesOf(err);
    if (causes.length) for (const c of causes) io.err(formatStop(c.toJSON()));
    else io.err(`bootstrap: ${err.message}`);
    if (err.exitCode === 64) io.err(USAGE);
    return err.exitCode;
  }
  if (err instanceof DagInvalid) {
    io.err(`bootstrap: internal error: ${err.message}`);
    return 70;
  }
  io.err(`bootstrap: internal error (a bug, please report it with this trace):\n${(err as Error)?.stack ?? String(err)}`);
  return 70;
}
