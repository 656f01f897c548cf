import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { CLIENT_TIMEOUT_TEXT, fetchText, refusal, x509Error } from '../../lab/twin/server/fetch.ts';

describe('k3s twin TLS errors in Go words', () => {
  const url = new URL('https://10.0.0.250:6443/v1-k3s/config');
  const err = (code: string, reason = '') => Object.assign(new Error(reason), { code, reason });

  it('maps expiry, unknown authority and a name outside the SANs', () => {
    expect(x509Error(err('CERT_NOT_YET_VALID'), url)).toBe('x509: certificate has expired or is not yet valid');
    expect(x509Error(err('SELF_SIGNED_CERT_IN_CHAIN'), url)).toBe('x509: certificate signed by unknown authority');
    expect(x509Error(err('ERR_TLS_CERT_ALTNAME_INVALID', "IP: 10.0.0.250 is not in the cert's list: IP Address:10.0.0.1, DNS:localhost"), url)).toBe(
      'x509: certificate is valid for 10.0.0.1, localhost, not 10.0.0.250',
    );
  });

  it('leaves non-TLS errors to the dial error path', () => {
    expect(x509Error(err('ECONNREFUSED'), url)).toBeUndefined();
  });
});

describe("k3s twin requests in Go's net/http words", () => {
  it("a server that never answers is the client's timeout, however far the request got", async () => {
    // Accepts and never says a word (a TLS handshake that never comes back, as behind a dropping firewall).
    const server = createServer(() => undefined);
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const { port } = server.address() as { port: number };
    try {
      const url = `https://127.0.0.1:${port}/cacerts`;
      await expect(fetchText(url, { timeoutMs: 300 })).rejects.toThrow(`Get "${url}": ${CLIENT_TIMEOUT_TEXT}`);
      expect(CLIENT_TIMEOUT_TEXT).toBe('context deadline exceeded (Client.Timeout exceeded while awaiting headers)');
    } finally {
      server.close();
    }
  });

  it('a refusal with a metav1.Status body is its message (a StatusError), any other `<url>: <status>`', () => {
    const status = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: 'Internal error occurred: failed to get etcd MemberList: context deadline exceeded',
      code: 500,
    });
    expect(refusal('https://10.0.0.11:6443/db/info', 500, status)).toBe('Internal error occurred: failed to get etcd MemberList: context deadline exceeded');
    expect(refusal('https://10.0.0.11:6443/v1-k3s/server-bootstrap', 401, 'Unauthorized\n')).toBe(
      'https://10.0.0.11:6443/v1-k3s/server-bootstrap: 401 Unauthorized',
    );
  });
});
