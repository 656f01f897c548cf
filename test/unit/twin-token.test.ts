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

  it('accepts a short token (bare secret) without a CA hash', () => {
    expect(parseToken('just-a-secret\n')).toEqual({ caHash: '', username: 'server', password: 'just-a-secret' });
  });
});
