// Token format as k3s parses it (k3s-io/k3s v1.33.5+k3s1 pkg/clientaccess/token.go parseToken):
// `K10<sha256 of the CA bundle>::<username>:<password>`, `K10::<username>:<password>`, a bare password
// ("short" token), or a kubeadm-style bootstrap token `<6>.<16>`. A CA hash that is not 64 characters is
// "invalid token CA hash length"; credentials without a non-empty password are "invalid token format".
// The hash is sha256 over the exact bytes the server returns from /cacerts (a one-certificate bundle).
import { createHash, randomBytes } from 'node:crypto';

export interface ParsedToken {
  caHash: string;
  /** Empty for a bare password: k3s then uses the user its caller asks for (server, node). */
  username: string;
  password: string;
}

const PREFIX = 'K10';
const CA_HASH_LENGTH = 64;
/** pkg/kubeadm (k8s bootstrap token): id.secret. */
const BOOTSTRAP_TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

export function hashCA(pem: string | Buffer): string {
  return createHash('sha256').update(pem).digest('hex');
}

/** Throws k3s's own error for a malformed token. */
export function parseToken(token: string): ParsedToken {
  let t = token.trim();
  if (t.length === 0) throw new Error('token must not be empty');
  if (!t.startsWith(PREFIX)) t = BOOTSTRAP_TOKEN.test(t) ? `${PREFIX}::${t}` : `${PREFIX}:::${t}`;
  t = t.slice(PREFIX.length);
  let caHash = '';
  const sep = t.indexOf('::');
  if (sep >= 0) {
    caHash = t.slice(0, sep);
    if (caHash.length > 0 && caHash.length !== CA_HASH_LENGTH) throw new Error('invalid token CA hash length');
    t = t.slice(sep + 2);
  }
  if (BOOTSTRAP_TOKEN.test(t)) return { caHash, username: '', password: t };
  const colon = t.indexOf(':');
  if (colon < 0 || colon === t.length - 1) throw new Error('invalid token format');
  return { caHash, username: t.slice(0, colon), password: t.slice(colon + 1) };
}

export function formatToken(caPem: string, secret: string, role = 'server'): string {
  return `K10${hashCA(caPem)}::${role}:${secret}`;
}

export function newSecret(): string {
  return randomBytes(16).toString('hex');
}

export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 12);
}
