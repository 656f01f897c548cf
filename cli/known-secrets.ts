// Every secret a run may meet, registered with the run's redactor before its first remote command: the
// cluster token (state folder), the admin kubeconfig's client key (state folder) and the Flux deploy key
// (the inventory's file). A later phase may add more (the full token once the founder made its CA), but a
// secret already on disk must never reach a log because the phase that knows it had not run yet.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { LoadedInventory } from '../src/inventory/index.ts';

export function knownSecrets(stateDir: string, loaded: LoadedInventory): string[] {
  const secrets: string[] = [];
  const read = (file: string | undefined) => {
    try {
      return file && existsSync(file) && statSync(file).isFile() ? readFileSync(file, 'utf8') : undefined;
    } catch {
      return undefined;
    }
  };
  const token = read(join(stateDir, 'cluster-token.json'));
  if (token) {
    try {
      const t = JSON.parse(token) as { secret?: unknown; full?: unknown };
      for (const v of [t.secret, t.full]) if (typeof v === 'string') secrets.push(v);
    } catch {
      // A torn token file is named by the phase that reads it; nothing to register from it here.
    }
  }
  const kubeconfig = read(join(stateDir, 'kubeconfig'));
  if (kubeconfig) {
    try {
      const doc = parse(kubeconfig) as { users?: { user?: Record<string, unknown> }[] };
      for (const u of doc.users ?? []) {
        for (const k of ['client-key-data', 'token', 'password']) {
          const v = u.user?.[k];
          if (typeof v === 'string') secrets.push(v, ...(k === 'client-key-data' ? [Buffer.from(v, 'base64').toString('utf8')] : []));
        }
      }
    } catch {
      // not YAML: the file is rewritten by the founder's gate
    }
  }
  const deployKey = read(loaded.derived.paths.fluxDeployKeyFile);
  if (deployKey) secrets.push(deployKey.trim());
  return secrets;
}
