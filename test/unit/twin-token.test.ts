import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatToken, hashCA, parseToken } from '../../lab/twin/token.ts';

describe('k3s twin token format', () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

  it('is K10 + sha256 of the CA bundle bytes + ::server: + secret', () => {
    const t = formatToken(pem, 's3cret');
    expect(t).toBe(`K10${createHash('sha256').update(pem).digest('hex')}::server:s3cret`);
    expect(parseToken(t)).toEqual({ caHash: hashCA(pem), username: 'server', password: 's3cret' });
  });

  it('accepts a short token (bare secret) without a CA hash or user', () => {
    expect(parseToken('just-a-secret\n')).toEqual({ caHash: '', username: '', password: 'just-a-secret' });
    expect(parseToken('K10::node:pw')).toEqual({ caHash: '', username: 'node', password: 'pw' });
  });

  it("refuses malformed tokens in k3s's words (pkg/clientaccess/token.go parseToken)", () => {
    expect(() => parseToken('')).toThrow('token must not be empty');
    expect(() => parseToken('K10::')).toThrow('invalid token format');
    expect(() => parseToken('K10::x')).toThrow('invalid token format');
    expect(() => parseToken('K10::x:')).toThrow('invalid token format');
    expect(() => parseToken('K10XX::x:y')).toThrow('invalid token CA hash length');
    expect(() => parseToken('K10deadbeef')).toThrow('invalid token format');
  });
});
