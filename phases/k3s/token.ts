// The cluster token: generated once per environment on the operator's machine, kept 0600 in the
// environment's state folder, never printed or logged, reused by every later run and by restores.
// The founder is given the bare secret (its CA does not exist yet); once it is up, the full token
// (K10<sha256 of the CA>::server:<secret>) is read back so joiners pin the cluster CA.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

export interface ClusterToken {
  secret: string;
  /** The full form, known once the founder has created its CA. */
  full?: string;
}

const file = (stateDir: string) => join(stateDir, 'cluster-token.json');

export function readToken(stateDir: string): ClusterToken | undefined {
  return existsSync(file(stateDir)) ? (JSON.parse(readFileSync(file(stateDir), 'utf8')) as ClusterToken) : undefined;
}

export function writeToken(stateDir: string, token: ClusterToken): void {
  const tmp = `${file(stateDir)}.tmp`;
  writeFileSync(tmp, JSON.stringify(token), { mode: 0o600 });
  renameSync(tmp, file(stateDir));
}

/** The environment's token, created on first use (not in check mode: check mode writes nothing). */
export function ensureToken(stateDir: string, opts: { create: boolean }): ClusterToken | undefined {
  const existing = readToken(stateDir);
  if (existing || !opts.create) return existing;
  const token = { secret: randomBytes(24).toString('hex') };
  writeToken(stateDir, token);
  return token;
}

/** The secret part of a full token, to check a founder's token belongs to this environment. */
export function secretOf(full: string): string {
  const i = full.indexOf('::server:');
  return i < 0 ? full : full.slice(i + '::server:'.length);
}
