import { describe, expect, it } from 'vitest';
import { checkHostKey, fingerprint, keyTypeOfBlob, knownHostsName, parseKnownHosts, preferredHostKeyAlgorithms } from '../../src/transport/known-hosts.ts';

// Public keys made with ssh-keygen for these tests; the fingerprints are what `ssh-keygen -lf` printed.
const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEkw1fNGKaJOkmr2EYL9pEW1ZF2PXqOsd/drMAs3bGsp';
const ED_FP = 'SHA256:aHA1ZkmRT2BXRybrpNWFdnCigw88dVpImC/Xx1HhBZc';
const ED2 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRcrrCcE2lz02e0uTryKq9ykvmUlFIK7OcHjAXDTmkJ';
const EC =
  'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGS+mqjkhySKS6LU0W5GPpUvaPIB4gC5c0ZgtGZgAwVezDQT5XLzxQRN9Lnf8PES5gXSBDhg3e0qU6WjraamY+U=';
const EC_FP = 'SHA256:7c4s8x2zaUf8jsuwXcNAyP1+1srXVlJsbMSjbnF6MR8';
const RSA =
  'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDBNNq4QS3cAs6FpjU4JLUyFentV/REbhO0s+ZkiSVU2r5Dr54WMdW7LmDiJrpbUQX7QphUIq6m3Kd9Ayt7mGw+2HR0dtP9A6v+AkRiswyxv/j7OrHrYhpUKXn9K6IodAAg2edW9q/rsaL34Gr2dW1qMKSLZ7CiTt0V7ElINeKlyqVW6+FdFl+OiP7Z7u/Ie/CCb8rm+k1xuRxWNyWJqKm1Tmu6ibWu8QK6zfcCK+7nJd2Jg/fiJQpYx6gFL0KOZtWI4eGUWxWwJRDACwx9v8R/w9zI9LF6B7bJCg09lcjVpeaUWYlp3KZm2RIUXawX9F7tsbIc7TzZ3RjQpI6vfA3F';
const RSA_FP = 'SHA256:EvtoAzCz7nfLFVH0PoMAIqLcRwaFvGvb+/ZAXW+ETAc';
// `ssh-keygen -H` of "[10.0.0.5]:2222 ED" and "10.0.0.6 ED".
const HASHED_2222 = '|1|NLFX88igwZaHXZ4/Z6J3BE47wJE=|Rh+wcNxbqwH/sLdXSgllZGoSqn0=';
const HASHED_22 = '|1|Kw/+J/gb8nTX8syHsm/2jXy47GU=|doF3hevFbVtFBgatP6zcy6SZE64=';

const blob = (line: string) => Buffer.from(line.split(' ')[1], 'base64');

describe('known_hosts parsing', () => {
  it('reads plain, hashed, marked and commented lines, and skips broken ones', () => {
    const text = [
      '# a comment',
      '',
      `192.168.2.10,k3s-prod-1 ${ED} root@k3s-prod-1`,
      `${HASHED_22} ${ED}`,
      `@revoked * ${ED2}`,
      `@cert-authority *.example ${EC}`,
      `@bogus-marker 10.0.0.1 ${ED}`,
      '10.0.0.9 ssh-ed25519 !!!not-base64',
      '10.0.0.9',
    ].join('\n');
    const entries = parseKnownHosts(text, 'kh');
    expect(entries.map((e) => [e.line, e.marker, e.keyType])).toEqual([
      [3, undefined, 'ssh-ed25519'],
      [4, undefined, 'ssh-ed25519'],
      [5, 'revoked', 'ssh-ed25519'],
      [6, 'cert-authority', 'ecdsa-sha2-nistp256'],
    ]);
    expect(entries[0].file).toBe('kh');
  });

  it('computes fingerprints exactly as ssh-keygen -lf prints them', () => {
    expect(fingerprint(blob(ED))).toBe(ED_FP);
    expect(fingerprint(blob(EC))).toBe(EC_FP);
    expect(fingerprint(blob(RSA))).toBe(RSA_FP);
    expect(keyTypeOfBlob(blob(RSA))).toBe('ssh-rsa');
    expect(keyTypeOfBlob(blob(EC))).toBe('ecdsa-sha2-nistp256');
  });

  it('names hosts on other ports [host]:port, as ssh does', () => {
    expect(knownHostsName('10.0.0.5', 22)).toBe('10.0.0.5');
    expect(knownHostsName('10.0.0.5', 2222)).toBe('[10.0.0.5]:2222');
  });
});

describe('known_hosts matching', () => {
  it('knows a host from a plain line in a comma list, case-insensitively', () => {
    const entries = parseKnownHosts(`192.168.2.10,K3S-Prod-1 ${ED}`, 'kh');
    expect(checkHostKey(entries, '192.168.2.10', 22, blob(ED)).kind).toBe('known');
    expect(checkHostKey(entries, 'k3s-prod-1', 22, blob(ED)).kind).toBe('known');
  });

  it('knows a host from hashed lines made by ssh-keygen -H, including [host]:port', () => {
    const entries = parseKnownHosts(`${HASHED_2222} ${ED}\n${HASHED_22} ${ED}`, 'kh');
    expect(checkHostKey(entries, '10.0.0.5', 2222, blob(ED))).toMatchObject({ kind: 'known', entry: { line: 1 } });
    expect(checkHostKey(entries, '10.0.0.6', 22, blob(ED))).toMatchObject({ kind: 'known', entry: { line: 2 } });
    // Same address, other port: a different host as far as known_hosts is concerned.
    expect(checkHostKey(entries, '10.0.0.5', 22, blob(ED)).kind).toBe('unknown');
    expect(checkHostKey(entries, '10.0.0.6', 2222, blob(ED)).kind).toBe('unknown');
  });

  it('does not take a port-22 line for a host on another port', () => {
    const entries = parseKnownHosts(`10.0.0.5 ${ED}`, 'kh');
    expect(checkHostKey(entries, '10.0.0.5', 2222, blob(ED)).kind).toBe('unknown');
    expect(checkHostKey(parseKnownHosts(`[10.0.0.5]:2222 ${ED}`, 'kh'), '10.0.0.5', 2222, blob(ED)).kind).toBe('known');
  });

  it('accepts any of several keys recorded for one host', () => {
    const entries = parseKnownHosts(`h1 ${RSA}\nh1 ${EC}\nh1 ${ED}`, 'kh');
    for (const k of [RSA, EC, ED]) expect(checkHostKey(entries, 'h1', 22, blob(k)).kind).toBe('known');
  });

  it('accepts a second key of the same type recorded on another line (key rotation)', () => {
    const entries = parseKnownHosts(`h1 ${ED}\nh1 ${ED2}`, 'kh');
    expect(checkHostKey(entries, 'h1', 22, blob(ED2))).toMatchObject({ kind: 'known', entry: { line: 2 } });
  });

  it('calls a different key of a recorded type a mismatch, naming the recorded lines', () => {
    const entries = parseKnownHosts(`other ${ED2}\nh1 ${RSA}\nh1 ${ED}`, 'kh');
    const v = checkHostKey(entries, 'h1', 22, blob(ED2));
    expect(v.kind).toBe('mismatch');
    if (v.kind !== 'mismatch') return;
    expect(v.expected.map((e) => [e.line, fingerprint(e.key)])).toEqual([[3, ED_FP]]);
  });

  it('calls a key of a type not recorded for the host unknown, and lists the other types', () => {
    const entries = parseKnownHosts(`h1 ${RSA}\nh2 ${ED}`, 'kh');
    const v = checkHostKey(entries, 'h1', 22, blob(ED));
    expect(v.kind).toBe('unknown');
    if (v.kind === 'unknown') expect(v.otherTypes.map((e) => e.keyType)).toEqual(['ssh-rsa']);
    expect(checkHostKey(entries, 'h3', 22, blob(ED))).toEqual({ kind: 'unknown', otherTypes: [] });
  });

  it('honours wildcards and negation in host patterns', () => {
    const entries = parseKnownHosts(`192.168.2.*,!192.168.2.99 ${ED}\nnode-? ${EC}`, 'kh');
    expect(checkHostKey(entries, '192.168.2.10', 22, blob(ED)).kind).toBe('known');
    expect(checkHostKey(entries, '192.168.2.99', 22, blob(ED)).kind).toBe('unknown');
    expect(checkHostKey(entries, '192.168.3.10', 22, blob(ED)).kind).toBe('unknown');
    expect(checkHostKey(entries, 'node-1', 22, blob(EC)).kind).toBe('known');
    expect(checkHostKey(entries, 'node-12', 22, blob(EC)).kind).toBe('unknown');
  });

  it('refuses a key marked @revoked even when a plain line also records it', () => {
    const entries = parseKnownHosts(`h1 ${ED}\n@revoked * ${ED}`, 'kh');
    expect(checkHostKey(entries, 'h1', 22, blob(ED))).toMatchObject({ kind: 'revoked', entry: { line: 2 } });
  });

  it('does not take a @cert-authority key for a host key', () => {
    const entries = parseKnownHosts(`@cert-authority h1 ${ED}`, 'kh');
    expect(checkHostKey(entries, 'h1', 22, blob(ED)).kind).toBe('unknown');
  });
});

describe('host key algorithm preference', () => {
  it('offers the recorded key types first, so a host known by RSA is asked for RSA', () => {
    const entries = parseKnownHosts(`h1 ${RSA}`, 'kh');
    const algos = preferredHostKeyAlgorithms(entries, 'h1', 22);
    expect(algos.slice(0, 2)).toEqual(['rsa-sha2-512', 'rsa-sha2-256']);
    // SHA-1 signatures are never offered (OpenSSH 8.8 refuses them by default too).
    expect(algos).not.toContain('ssh-rsa');
    expect(algos).toContain('ssh-ed25519');
    expect(preferredHostKeyAlgorithms(entries, 'h2', 22)[0]).toBe('ssh-ed25519');
  });
});
