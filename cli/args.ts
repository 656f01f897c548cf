// The command line: `bootstrap <env> [options]`, `bootstrap validate|plan|causes …`.
import { parseArgs } from 'node:util';
import { UsageError } from '../src/errors.ts';

export const USAGE = `usage:
  bootstrap <env> [--inventory FILE] [--check] [--from PHASE | --only PHASE | --until PHASE] [--resume] [--no-backup] [--allow-even] [--json]
  bootstrap <env> --replace SERVER [--inventory FILE] [--check] [--until PHASE] [--json]
  bootstrap <env> --reset [--node NAME] [--yes] [--inventory FILE] [--check] [--json]
  bootstrap <env> --restore BACKUP [--inventory FILE] [--check] [--until PHASE] [--json]
  bootstrap <env> --remove NAME[,NAME…] [--allow-even] [--inventory FILE] [--check] [--json]
  bootstrap validate [<env>] [--inventory FILE] [--json]
  bootstrap plan [<env>] [--inventory FILE] [--json]
  bootstrap verify <env> [--inventory FILE] [--drill] [--json]
  bootstrap backup <env> [--inventory FILE] [--server NAME] [--list] [--json]
  bootstrap kubeconfig <env> [--inventory FILE] [--merge [--context NAME]] [--output FILE] [--json]
  bootstrap artifacts <env> [--inventory FILE] [--check] [--json]
  bootstrap causes [--json]

phases: node-baseline, rolling-servers, rolling-agents, k3s-founder, k3s-join, kube-vip, agents, cilium, verify, flux
exit codes: 0 done; 1 stopped by a named cause; 2 --check found changes to make; 64 usage error; 65 invalid inventory`;

export type Command =
  | {
      kind: 'run';
      env?: string;
      inventory?: string;
      check: boolean;
      from?: string;
      only?: string;
      until?: string;
      resume: boolean;
      json: boolean;
      /** A rolling change without the backup it takes first (said loudly). */
      noBackup?: boolean;
      /** `--reset`: the cluster (or `--node`'s host) taken down for good; `--yes` skips the typed confirmation. */
      reset?: boolean;
      node?: string;
      yes?: boolean;
      replace?: string;
      restore?: string;
      /** `--remove`: the nodes to take out of the cluster, as named. */
      remove?: string[];
      /** `--allow-even`: an even server count passes (the inventory's, or what a removal leaves). */
      allowEven?: boolean;
    }
  | { kind: 'validate' | 'plan'; env?: string; inventory?: string; json: boolean }
  | { kind: 'causes'; json: boolean }
  | { kind: 'backup'; env?: string; inventory?: string; list: boolean; json: boolean; server?: string }
  | { kind: 'verify'; env?: string; inventory?: string; drill: boolean; json: boolean }
  | { kind: 'kubeconfig'; env?: string; inventory?: string; merge: boolean; context?: string; output?: string; json: boolean }
  | { kind: 'artifacts'; env?: string; inventory?: string; check: boolean; json: boolean }
  | { kind: 'help' };

const SUBCOMMANDS = new Set(['validate', 'plan', 'causes', 'verify', 'backup', 'kubeconfig', 'artifacts']);

/** The reset's flags given. */
function resetFlags(v: Record<string, unknown>): string[] {
  return (['reset', 'node', 'yes'] as const).filter((k) => v[k] !== undefined && v[k] !== false);
}

/**
 * A reset is a run of its own: --node and --yes belong to it, and nothing that selects phases or names
 * another kind of run goes with it (--remove is the membership change of another mode).
 */
function refuseResetMisuse(v: Record<string, unknown>): void {
  if (!v.reset) {
    const stray = resetFlags(v)[0];
    if (stray) throw new UsageError(`--${stray} belongs to --reset (bootstrap <env> --reset [--node NAME] [--yes])`);
    return;
  }
  const other = ['replace', 'restore', 'remove', 'allow-even', 'from', 'only', 'until', 'resume', 'no-backup'].find(
    (k) => v[k] !== undefined && v[k] !== false,
  );
  if (other) throw new UsageError(`--reset takes the cluster down: it cannot be combined with --${other}`);
}

export function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        inventory: { type: 'string' },
        check: { type: 'boolean', default: false },
        from: { type: 'string' },
        only: { type: 'string' },
        until: { type: 'string' },
        resume: { type: 'boolean', default: false },
        'no-backup': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        drill: { type: 'boolean', default: false },
        restore: { type: 'string' },
        reset: { type: 'boolean', default: false },
        node: { type: 'string' },
        yes: { type: 'boolean', default: false },
        list: { type: 'boolean', default: false },
        server: { type: 'string' },
        replace: { type: 'string' },
        remove: { type: 'string' },
        'allow-even': { type: 'boolean', default: false },
        merge: { type: 'boolean', default: false },
        context: { type: 'string' },
        output: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) return { kind: 'help' };
  const [first, ...rest] = positionals;
  if (first && SUBCOMMANDS.has(first)) {
    if (rest.length > 1) throw new UsageError(`unexpected arguments: ${rest.slice(1).join(' ')}`);
    // `artifacts --check` lists what would be downloaded: the one subcommand with a check of its own.
    const runOnly = (['check', 'resume'] as const)
      .filter((k) => v[k] && !(k === 'check' && first === 'artifacts'))
      .concat((['from', 'only', 'until', 'replace', 'restore', 'remove'] as const).filter((k) => v[k] !== undefined) as never[])
      .concat(v['no-backup'] ? (['no-backup'] as never[]) : [])
      .concat(v['allow-even'] ? (['allow-even'] as never[]) : []);
    if (runOnly.length) throw new UsageError(`--${runOnly[0]} belongs to a run (bootstrap <env>), not to ${first}`);
    if (v.drill && first !== 'verify') throw new UsageError(`--drill belongs to bootstrap verify, not to ${first}`);
    if (v.list && first !== 'backup') throw new UsageError(`--list belongs to bootstrap backup, not to ${first}`);
    if (v.server !== undefined && first !== 'backup') throw new UsageError(`--server belongs to bootstrap backup, not to ${first}`);
    const resetOnly = resetFlags(v)[0];
    if (resetOnly) throw new UsageError(`--${resetOnly} belongs to bootstrap <env> --reset, not to ${first}`);
    const kubeconfigOnly = (['merge', 'context', 'output'] as const).find((k) => (k === 'merge' ? v.merge : v[k] !== undefined));
    if (kubeconfigOnly && first !== 'kubeconfig') throw new UsageError(`--${kubeconfigOnly} belongs to bootstrap kubeconfig, not to ${first}`);
    if (v.context !== undefined && !v.merge) throw new UsageError('--context names the context --merge writes: give --merge too');
    if (first === 'causes') {
      if (rest.length || v.inventory) throw new UsageError('causes takes no environment');
      return { kind: 'causes', json: v.json! };
    }
    const env = rest[0];
    if (!env && !v.inventory) throw new UsageError(`${first} needs an environment or --inventory FILE`);
    if (first === 'backup')
      return { kind: 'backup', env, inventory: v.inventory, list: v.list!, json: v.json!, ...(v.server !== undefined && { server: v.server }) };
    if (first === 'kubeconfig')
      return {
        kind: 'kubeconfig',
        env,
        inventory: v.inventory,
        merge: v.merge!,
        json: v.json!,
        ...(v.context !== undefined && { context: v.context }),
        ...(v.output !== undefined && { output: v.output }),
      };
    if (first === 'artifacts') return { kind: 'artifacts', env, inventory: v.inventory, check: v.check!, json: v.json! };
    if (first === 'verify') return { kind: 'verify', env, inventory: v.inventory, drill: v.drill!, json: v.json! };
    return { kind: first as 'validate' | 'plan', env, inventory: v.inventory, json: v.json! };
  }
  if (!first && !v.inventory) return { kind: 'help' };
  if (rest.length) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (v.drill) throw new UsageError('--drill belongs to bootstrap verify <env>, not to a run');
  if (v.list) throw new UsageError('--list belongs to bootstrap backup <env>, not to a run');
  if (v.server !== undefined) throw new UsageError('--server belongs to bootstrap backup <env>, not to a run');
  for (const k of ['context', 'output'] as const) if (v[k] !== undefined) throw new UsageError(`--${k} belongs to bootstrap kubeconfig <env>, not to a run`);
  if (v.merge) throw new UsageError('--merge belongs to bootstrap kubeconfig <env>, not to a run');
  refuseResetMisuse(v);
  // The backup it skips is a rolling change's, which a recovery never makes.
  if (v['no-backup'] && (v.replace !== undefined || v.restore !== undefined))
    throw new UsageError(`--no-backup belongs to a build's rolling change, not to --${v.replace !== undefined ? 'replace' : 'restore'}`);
  // A restore rebuilds every server's datastore in the k3s phases: a selection that starts later would skip that.
  if (v.restore !== undefined && (v.from || v.only || v.resume))
    throw new UsageError('--restore runs from the first phase: it cannot be combined with --from, --only or --resume');
  // A replace deletes, wipes and rejoins within the k3s phases: a selection that starts later would skip that.
  if (v.replace !== undefined && v.restore !== undefined)
    throw new UsageError('--replace and --restore are two paths: choose one (runbooks/replace-server.md says which)');
  if (v.replace !== undefined && (v.from || v.only))
    throw new UsageError(`--replace runs from the first phase: it cannot be combined with --${v.from ? 'from' : 'only'}`);
  const remove = v.remove === undefined ? undefined : removeNames(v.remove);
  if (remove) {
    // A removal runs its own phase from its start: another path or a selection of phases cannot go with it.
    const other =
      (['replace', 'restore', 'from', 'only', 'until'] as const).find((k) => v[k] !== undefined) ??
      (v['no-backup'] ? 'no-backup' : v.resume ? 'resume' : undefined);
    if (other) throw new UsageError(`--remove cannot be combined with --${other}: it removes the named nodes in a run of its own (runbooks/membership.md)`);
  }
  return {
    kind: 'run',
    env: first,
    inventory: v.inventory,
    check: v.check!,
    from: v.from,
    only: v.only,
    until: v.until,
    resume: v.resume!,
    json: v.json!,
    ...(v['no-backup'] && { noBackup: true }),
    ...(v.reset && { reset: true, yes: v.yes! }),
    ...(v.node !== undefined && { node: v.node }),
    ...(v.replace !== undefined && { replace: v.replace }),
    ...(v.restore !== undefined && { restore: v.restore }),
    ...(remove && { remove }),
    ...(v['allow-even'] && { allowEven: true }),
  };
}

/** `--remove a,b`: the names, each once, none empty. */
function removeNames(text: string): string[] {
  const names = text.split(',').map((n) => n.trim());
  if (names.some((n) => !n)) throw new UsageError(`--remove ${text}: give node names separated by commas (--remove NAME[,NAME…])`);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new UsageError(`--remove ${text}: ${twice} is named twice`);
  return names;
}
