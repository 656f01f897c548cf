// The cluster token: generated once per environment on the operator's machine, kept 0600 in the
// environment's state folder, never printed or logged, reused by every later run and by restores.
// The founder is given the bare secret (its CA does not exist yet); once it is up, the full token
// (K10<sha256 of the CA>::server:<secret>) is read back so joiners pin the cluster CA.
//
// k3s accepts `K10<sha256 hex of the CA>::<user>:<password>`, `K10::<user>:<password>` or a bare password
// (k3s-io/k3s v1.33.5+k3s1 pkg/clientaccess/token.go parseToken: "invalid token CA hash length",
// "invalid token format"). A token of another form is refused where it is read (TOKEN_MALFORMED), before
// any host is dialled: every phase that uses it reads it in its local prepare.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { LocalChange } from '../engine/changes.ts';
import { join } from 'node:path';
import { CauseError } from '../errors.ts';
import { NotRegularFile, readRegularText } from '../util/regular-file.ts';

// The token's shape and form check live on the ground floor (backups read them too).
export { checkTokenForm, tokenFormProblem, type ClusterToken } from './cluster-token.ts';
import { checkTokenForm, type ClusterToken } from './cluster-token.ts';

const file = (stateDir: string) => join(stateDir, 'cluster-token.json');
/** Where the environment's token is kept on the operator's machine. */
export const tokenPath = file;

export function readToken(stateDir: string): ClusterToken | undefined {
  if (!existsSync(file(stateDir))) return undefined;
  let token: ClusterToken;
  try {
    token = JSON.parse(readRegularText(file(stateDir))) as ClusterToken;
  } catch (err) {
    const seen = err instanceof NotRegularFile ? err.message : "the state folder's cluster-token.json is not JSON";
    throw new CauseError('TOKEN_MALFORMED', {
      evidence: { command: 'read cluster-token.json', seen },
      retryable: false,
    });
  }
  return checkTokenForm(token, 'cluster-token.json');
}

const prepared = new WeakSet<object>();

/** A phase's local prepare: the state folder's token checked before any host is dialled (once a run). */
export async function prepareToken(ctx: { stateDir: string }): Promise<{ stops: CauseError[] }> {
  if (prepared.has(ctx)) return { stops: [] };
  prepared.add(ctx);
  try {
    readToken(ctx.stateDir);
    return { stops: [] };
  } catch (e) {
    if (e instanceof CauseError) return { stops: [e] };
    throw e;
  }
}

/** A new token for an environment that has none (written by the plan that uses it: tokenChange). */
export function newToken(): ClusterToken {
  return { secret: randomBytes(24).toString('hex') };
}

/** The local change that keeps `token` in the state folder (0600, whole or not at all), or none when it is there. */
export function tokenChange(stateDir: string, token: ClusterToken): LocalChange[] {
  const content = JSON.stringify(token);
  const current = existsSync(file(stateDir)) ? readRegularText(file(stateDir)) : null;
  if (current === content) return [];
  return [{ kind: 'local', path: file(stateDir), content, current, mode: '0600', secret: true }];
}

/** The secret part of a full token, to check a founder's token belongs to this environment. */
export function secretOf(full: string): string {
  const i = full.indexOf('::');
  if (i < 0) return full;
  const creds = full.slice(i + 2);
  const colon = creds.indexOf(':');
  return colon < 0 ? creds : creds.slice(colon + 1);
}
