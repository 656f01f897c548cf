// Token format (k3s pkg/clientaccess/token.go, docs cli/token): `K10<sha256 of the CA bundle>::server:<secret>`,
// or a bare secret ("short" token). The hash is sha256 over the exact bytes the server returns from /cacerts.
import { createHash, randomBytes } from 'node:crypto';

export interface ParsedToken {
  caHash: string;
  username: string;
  password: string;
}

export function hashCA(pem: string | Buffer): string {
  return createHash('sha256').update(pem).digest('hex');
}

export function parseToken(token: string): ParsedToken {
  const t = token.trim();
  if (t.startsWith('K10') && t.includes('::')) {
    const [prefix, creds] = t.split('::', 2);
    const colon = creds.indexOf(':');
    return {
      caHash: prefix.slice(3),
      username: colon >= 0 ? creds.slice(0, colon) : 'server',
      password: colon >= 0 ? creds.slice(colon + 1) : creds,
    };
  }
  return { caHash: '', username: 'server', password: t };
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
