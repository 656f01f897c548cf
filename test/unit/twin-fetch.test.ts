import { describe, expect, it } from 'vitest';
import { x509Error } from '../../lab/twin/server/fetch.ts';

describe('k3s twin TLS errors in Go words', () => {
  const url = new URL('https://10.0.0.250:6443/v1-k3s/config');
  const err = (code: string, reason = '') => Object.assign(new Error(reason), { code, reason });

  it('maps expiry, unknown authority and a name outside the SANs', () => {
    expect(x509Error(err('CERT_NOT_YET_VALID'), url)).toBe('x509: certificate has expired or is not yet valid');
    expect(x509Error(err('SELF_SIGNED_CERT_IN_CHAIN'), url)).toBe('x509: certificate signed by unknown authority');
    expect(x509Error(err('ERR_TLS_CERT_ALTNAME_INVALID', "IP: 10.0.0.250 is not in the cert's list: IP Address:10.0.0.1, DNS:localhost"), url))
      .toBe('x509: certificate is valid for 10.0.0.1, localhost, not 10.0.0.250');
  });

  it('leaves non-TLS errors to the dial error path', () => {
    expect(x509Error(err('ECONNREFUSED'), url)).toBeUndefined();
  });
});
