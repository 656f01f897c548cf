// OpenSSH's known_hosts file, read the way `ssh` reads it: plain and hashed (`|1|salt|hash`) host
// fields, `[host]:port` names for ports other than 22, wildcard and negated patterns, several keys
// per host, and the `@revoked` / `@cert-authority` markers. Pure: the caller reads the file.
//
// A verdict has four outcomes, matching what `ssh` does with StrictHostKeyChecking=yes:
//   known    — a line for this host carries exactly this key;
//   mismatch — a line for this host carries a different key of the same type (the key changed:
//              possibly an attack, never accepted, never retried);
//   revoked  — a `@revoked` line carries this key (treated like a mismatch: never accepted);
//   unknown  — no line for this host carries a key of this type (first contact).
import { createHash, createHmac } from 'node:crypto';
import { matchPatternList } from './patterns.ts';

export interface KnownHostsEntry {
  file: string;
  /** 1-based line number in the file (for evidence: "known_hosts line 12"). */
  line: number;
  marker?: 'revoked' | 'cert-authority';
  /** The host field as written (hashed or a comma-separated pattern list). */
  hosts: string;
  /** The key type as written on the line (e.g. ssh-ed25519). */
  keyType: string;
  /** The public key blob (SSH wire format), decoded from base64. */
  key: Buffer;
}

/** Parse a known_hosts file. Lines that cannot be read are skipped, as `ssh` skips them. */
export function parseKnownHosts(text: string, file: string): KnownHostsEntry[] {
  const entries: KnownHostsEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (raw === '' || raw.startsWith('#')) continue;
    const fields = raw.split(/\s+/);
    let marker: KnownHostsEntry['marker'];
    if (fields[0].startsWith('@')) {
      const m = fields.shift()!;
      if (m === '@revoked') marker = 'revoked';
      else if (m === '@cert-authority') marker = 'cert-authority';
      else continue; // an unknown marker: ssh ignores the line
    }
    const [hosts, keyType, b64] = fields;
    if (!hosts || !keyType || !b64) continue;
    const key = Buffer.from(b64, 'base64');
    if (key.length === 0 || keyTypeOfBlob(key) === undefined) continue;
    entries.push({ file, line: i + 1, marker, hosts, keyType, key });
  }
  return entries;
}

/** The name `ssh` looks up: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** Whether an entry's host field names this host (`name` as made by knownHostsName). */
function entryMatchesHost(entry: KnownHostsEntry, name: string): boolean {
  const field = entry.hosts;
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const digest = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
    return digest === hash;
  }
  // Host names are case-insensitive in known_hosts, as in ssh.
  return matchPatternList(name.toLowerCase(), field.toLowerCase()) === true;
}

/** The key type inside a public key blob (its first SSH string), or undefined if it is not one. */
export function keyTypeOfBlob(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const len = blob.readUInt32BE(0);
  if (len === 0 || len > 64 || 4 + len > blob.length) return undefined;
  const type = blob.subarray(4, 4 + len).toString('latin1');
  return /^[\x21-\x7e]+$/.test(type) ? type : undefined;
}

/** OpenSSH's fingerprint form: `SHA256:` + unpadded base64 of the blob's SHA-256. */
export function fingerprint(blob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
}

export type HostKeyVerdict =
  | { kind: 'known'; entry: KnownHostsEntry }
  | { kind: 'mismatch'; expected: KnownHostsEntry[] }
  | { kind: 'revoked'; entry: KnownHostsEntry }
  /** otherTypes: keys of other types recorded for this host (ssh mentions them too). */
  | { kind: 'unknown'; otherTypes: KnownHostsEntry[] };

/** Check the key a host presented against the entries for `host:port`. */
export function checkHostKey(entries: KnownHostsEntry[], host: string, port: number, seen: Buffer): HostKeyVerdict {
  const name = knownHostsName(host, port);
  const seenType = keyTypeOfBlob(seen);
  const forHost = entries.filter((e) => entryMatchesHost(e, name));
  // Like ssh, a `@revoked` line applies to the hosts it names (usually `*`).
  const revoked = forHost.find((e) => e.marker === 'revoked' && e.key.equals(seen));
  if (revoked) return { kind: 'revoked', entry: revoked };
  // Certificate authorities sign host certificates; a plain host key never matches them.
  const plain = forHost.filter((e) => e.marker === undefined);
  const exact = plain.find((e) => e.key.equals(seen));
  if (exact) return { kind: 'known', entry: exact };
  const sameType = plain.filter((e) => keyTypeOfBlob(e.key) === seenType);
  if (sameType.length > 0) return { kind: 'mismatch', expected: sameType };
  return { kind: 'unknown', otherTypes: plain };
}

/**
 * Host key algorithms ssh2 can negotiate, in its default order, without `ssh-rsa`: an RSA host key signs
 * with SHA-2 (rsa-sha2-512/256) on every OpenSSH since 7.2, and OpenSSH 8.8 stopped accepting the SHA-1
 * signature by default (its release notes); offering it only lets a man in the middle ask for the weak one.
 */
const SSH2_HOST_KEY_ALGORITHMS = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256'];

/**
 * The host key algorithms to offer, those already recorded for this host first — as `ssh` does, so a
 * host known by its RSA key is not asked for its Ed25519 key (which would look unknown).
 */
export function preferredHostKeyAlgorithms(entries: KnownHostsEntry[], host: string, port: number): string[] {
  const name = knownHostsName(host, port);
  const recorded = new Set(entries.filter((e) => e.marker === undefined && entryMatchesHost(e, name)).map((e) => keyTypeOfBlob(e.key)));
  const algoType = (algo: string) => (algo.startsWith('rsa-sha2-') ? 'ssh-rsa' : algo);
  const first = SSH2_HOST_KEY_ALGORITHMS.filter((a) => recorded.has(algoType(a)));
  return [...first, ...SSH2_HOST_KEY_ALGORITHMS.filter((a) => !first.includes(a))];
}

/** The short name `ssh-keyscan -t` takes for a key type. */
export function keyscanType(keyType: string): string {
  if (keyType === 'ssh-ed25519') return 'ed25519';
  if (keyType === 'ssh-rsa') return 'rsa';
  if (keyType.startsWith('ecdsa-')) return 'ecdsa';
  return keyType;
}
