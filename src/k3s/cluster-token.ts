// The cluster token's shape, and the form k3s accepts: `K10<sha256 hex of the CA>::<user>:<password>`,
// `K10::<user>:<password>` or a bare password (k3s-io/k3s v1.33.5+k3s1 pkg/clientaccess/token.go
// parseToken: "invalid token CA hash length", "invalid token format"). Pure; the state folder's file is
// read and written by src/k3s/token.ts, and backups carry the same object.
import { CauseError } from '../errors.ts';

export interface ClusterToken {
  secret: string;
  /** The full form, known once the founder has created its CA. */
  full?: string;
}

/**
 * What is wrong with a token's form, in k3s's words, or undefined when k3s would accept it. The bare
 * secret the engine generates is hex; a full token must pin a 64-hex CA hash and carry user and password.
 */
export function tokenFormProblem(token: ClusterToken): string | undefined {
  if (typeof token?.secret !== 'string' || !token.secret) return 'token must not be empty';
  // A bare secret that starts with K10 or holds "::" would be parsed by k3s as a full token.
  if (token.secret.startsWith('K10') || /\s/.test(token.secret)) return 'invalid token format';
  if (token.full === undefined) return undefined;
  if (typeof token.full !== 'string' || !token.full.startsWith('K10')) return 'invalid token format';
  const rest = token.full.slice(3);
  const sep = rest.indexOf('::');
  if (sep < 0) return 'invalid token format';
  const hash = rest.slice(0, sep);
  if (hash.length !== 64) return 'invalid token CA hash length';
  if (!/^[0-9a-f]{64}$/.test(hash)) return 'invalid token CA hash length';
  const creds = rest.slice(sep + 2);
  const colon = creds.indexOf(':');
  if (colon < 1 || colon === creds.length - 1 || /\s/.test(creds)) return 'invalid token format';
  return undefined;
}

/** Refuses a token k3s would refuse (TOKEN_MALFORMED); `where` names the file, never the token. */
export function checkTokenForm(token: ClusterToken, where: string): ClusterToken {
  const problem = tokenFormProblem(token);
  if (problem) {
    throw new CauseError('TOKEN_MALFORMED', {
      evidence: { command: `read ${where}`, seen: `k3s would refuse this token: ${problem} (expected K10<64 hex>::<user>:<password> or a bare secret)` },
      retryable: false,
    });
  }
  return token;
}
