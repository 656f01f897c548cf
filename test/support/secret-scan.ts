// Every lab run is searched for the environment's secrets — the cluster token, the admin kubeconfig's
// client key and the Flux deploy key — in its stdout, stderr (the --json stream included) and in the
// run logs and reports it wrote, in plain, JSON-escaped and base64 form at every alignment (test/support/secrets.ts).
// A hit fails the test that made the run, whatever it was testing.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { secretHits } from './secrets.ts';

/** The state folder's file of that name and the copies a reset moved aside (`<name>.reset-<time>`). */
const withAside = (envState: string, name: string) =>
  existsSync(envState)
    ? readdirSync(envState)
        .filter((f) => f === name || f.startsWith(`${name}.reset-`))
        .map((f) => join(envState, f))
    : [];

function secretsOf(envState: string, inventoryFile: string): string[] {
  const secrets: string[] = [];
  for (const tokenFile of withAside(envState, 'cluster-token.json')) {
    const text = readFileSync(tokenFile, 'utf8');
    try {
      const t = JSON.parse(text);
      for (const v of [t.secret, t.full]) if (typeof v === 'string') secrets.push(v);
    } catch {
      // A torn token file (the fault matrix tears one): what is left of each value is still secret.
      for (const m of text.matchAll(/"(?:secret|full)":"([^"]{16,})/g)) secrets.push(m[1]);
    }
  }
  for (const kubeconfig of withAside(envState, 'kubeconfig')) {
    for (const u of parse(readFileSync(kubeconfig, 'utf8'))?.users ?? []) {
      const key = u?.user?.['client-key-data'];
      if (typeof key === 'string') secrets.push(Buffer.from(key, 'base64').toString('utf8').trim(), key);
    }
  }
  const deployKey = parse(readFileSync(inventoryFile, 'utf8'))?.flux?.deployKeyFile;
  if (typeof deployKey === 'string' && existsSync(deployKey)) {
    const pem = readFileSync(deployKey, 'utf8').trim();
    // The PEM's body lines: the key's material, whichever way the text around it was cut or escaped.
    secrets.push(pem, ...pem.split('\n').filter((l) => !l.startsWith('-----') && l.length >= 40));
  }
  return secrets;
}

/** Where the run leaked a secret (empty when nowhere). */
export function secretLeaks(run: { stdout: string; stderr: string }, stateDir: string, inventoryFile: string, env = 'lab'): string[] {
  const envState = join(stateDir, env);
  const secrets = secretsOf(envState, inventoryFile);
  if (!secrets.length) return [];
  const runs = join(envState, 'runs');
  const logs = existsSync(runs)
    ? readdirSync(runs)
        // The run logs and the run reports: each is searched like the output.
        .filter((f) => f.endsWith('.log') || f.endsWith('.html'))
        .map((f) => [f, readFileSync(join(runs, f), 'utf8')] as const)
    : [];
  const hits = [
    ...secretHits(run.stdout, secrets).map((h) => `stdout: ${h}`),
    ...secretHits(run.stderr, secrets).map((h) => `stderr: ${h}`),
    ...logs.flatMap(([f, text]) => secretHits(text, secrets).map((h) => `runs/${f}: ${h}`)),
  ];
  return hits;
}
