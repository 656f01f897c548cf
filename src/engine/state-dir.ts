// Where an environment's state lives on the operator's machine: outside the repository, 0700.
// It holds the cluster token and kubeconfig (0600), the journal and the run logs.
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function stateDirFor(env: string, envVars: NodeJS.ProcessEnv = process.env): string {
  const base = envVars.BOOTSTRAP_STATE_DIR ?? join(envVars.XDG_STATE_HOME ?? join(homedir(), '.local', 'state'), 'bootstrap');
  return join(base, env);
}

export function ensureStateDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
