// `bootstrap kubeconfig <env>`: the admin kubeconfig a build keeps in the state folder (dialling the VIP),
// where the operator wants it: said where it is, copied to `--output FILE`, or with `--merge` put into the
// operator's kubeconfig ($KUBECONFIG's first file, else ~/.kube/config, or `--output`) under a context named
// `--context` (default: the environment). Local only: no connection. Never prints the file's content.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { CauseError } from '../src/errors.ts';
import { kubeconfigPath } from '../src/k3s/kubeconfig-file.ts';
import { adminServer, mergeKubeconfig } from '../src/kube/kubeconfig-merge.ts';
import { stateDirFor } from '../src/engine/state-dir.ts';
import { writeFileAtomic } from '../src/util/atomic-file.ts';
import type { Command } from './args.ts';
import type { Io } from './io.ts';
import { loadFor } from './run-command.ts';

/** The parsed command (cli/args.ts), the inventory resolved to its file. */
export type KubeconfigArgs = Omit<Extract<Command, { kind: 'kubeconfig' }>, 'kind' | 'inventory'> & { file: string };

/** Where `kubectl` looks first: $KUBECONFIG's first entry, else ~/.kube/config. */
function operatorKubeconfigFile(env: NodeJS.ProcessEnv): string {
  const first = (env.KUBECONFIG ?? '').split(delimiter).find((p) => p.trim());
  return resolve(first ?? join(env.HOME ?? homedir(), '.kube', 'config'));
}

/** A torn or foreign state copy is named with its remedy (a run writes it again whole), never a stack trace. */
function readServer(source: string, text: string, env: string): string {
  try {
    return adminServer(text);
  } catch (err) {
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: `The state folder's kubeconfig for ${env} cannot be read`,
      evidence: {
        seen: `${source} cannot be read: ${(err as Error).message.split('\n')[0]}`,
        command: `bootstrap ${env}   # its cluster-access step writes the kubeconfig again, whole, from the founder's`,
      },
    });
  }
}

export async function kubeconfigCommand(args: KubeconfigArgs, io: Io): Promise<number> {
  const loaded = await loadFor(args.file, args.env);
  const env = loaded.inventory.environment;
  const source = kubeconfigPath(stateDirFor(env, io.env));
  if (!existsSync(source)) {
    throw new CauseError('KUBECONFIG_NOT_FETCHED', {
      message: `No kubeconfig for ${env} in its state folder yet`,
      evidence: { seen: `${source} does not exist` },
    });
  }
  const text = readFileSync(source, 'utf8');
  // The bastion's instructions (YAML comments on top of the state copy) are not secret and say how to dial.
  const access = text.split('\n').filter((l) => l.startsWith('#'));
  const server = readServer(source, text, env);

  if (!args.merge) {
    const file = args.output ? resolve(args.output) : source;
    if (args.output) writeCopy(file, text);
    report(io, args.json, { file, server, action: args.output ? 'written' : 'kept' }, [
      `kubeconfig for ${env} (dials ${server}): ${file}`,
      ...access,
      `kubectl --kubeconfig ${file} get nodes`,
    ]);
    return 0;
  }

  const file = args.output ? resolve(args.output) : operatorKubeconfigFile(io.env);
  const name = args.context ?? env;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  const merged = mergeKubeconfig(current, text, name);
  if (!merged.ok) {
    throw new CauseError('KUBECONFIG_MERGE_REFUSED', {
      message: `${file} already holds "${name}" for another cluster, or is no kubeconfig`,
      evidence: { seen: merged.seen },
    });
  }
  writeCopy(file, merged.text);
  const action = merged.replaced ? 'replaced' : 'added';
  report(io, args.json, { file, server, context: name, action }, [
    `context ${name} ${action} in ${file} (dials ${merged.server})${merged.currentContextSet ? '; it is the current context' : ''}`,
    ...access,
    merged.currentContextSet ? `kubectl get nodes` : `kubectl --context ${name} get nodes   # or: kubectl config use-context ${name}`,
  ]);
  return 0;
}

/** Kubeconfigs hold the cluster's admin credentials: 0600, written whole, in a folder only the owner reads. */
function writeCopy(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, text, 0o600);
}

function report(io: Io, json: boolean, fields: Record<string, string>, lines: string[]): void {
  if (json) io.out(JSON.stringify(fields));
  else for (const l of lines) io.out(l);
}
