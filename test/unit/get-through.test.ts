// /readyz asked from a host through its SSH connection (src/kube/get-through.ts), and the VIP gate's /livez
// (phases/kube-vip/vip-gate.ts livezThrough), against a real HTTPS server on 127.0.0.1 that, as
// kube-apiserver does, trusts client certificates of the cluster CA only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getThrough, readyzThrough, type ApiCredentials } from '../../src/kube/get-through.ts';
import { livezThrough } from '../../phases/kube-vip/vip-gate.ts';
import type { Remote } from '../../src/transport/types.ts';

let dir = '';
let server: Server;
let port = 0;
let creds: ApiCredentials;
let foreign: ApiCredentials;
/** What the server answers to /readyz (or /livez) next. */
let reply: (res: import('node:http').ServerResponse) => void = () => undefined;
const forwards: string[] = [];

function remote(o: { refuse?: string } = {}): Remote {
  return {
    host: 'k3s-prod-2',
    exec: async () => {
      throw new Error('no process is started on the host');
    },
    close: async () => {},
    forward: (to: string, p: number) =>
      new Promise<Duplex>((resolve, reject) => {
        forwards.push(`${to}:${p}`);
        if (o.refuse) return reject(new Error(o.refuse));
        const s = connect(port, '127.0.0.1', () => resolve(s));
        s.once('error', reject);
      }),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readyz-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-subj', `/CN=${ca}`, '-days', '1');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  const sign = (name: string, cn: string, ca: string, ext?: string) => {
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      ...(ext ? ['-extfile', ext] : []),
    );
  };
  sign('api', 'kube-apiserver', 'ca', 'san.ext');
  sign('admin', 'system:admin', 'ca');
  sign('stranger', 'system:admin', 'other-ca');
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  creds = { ca: read('ca.pem'), cert: read('admin.pem'), key: read('admin.key') };
  foreign = { ca: read('other-ca.pem'), cert: read('stranger.pem'), key: read('stranger.key') };
  server = createServer({ key: read('api.key'), cert: read('api.pem'), ca: read('ca.pem'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    if (req.url !== '/readyz' && req.url !== '/livez') return void res.writeHead(404).end();
    reply(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('readyzThrough', () => {
  it("ok: 200 `ok` over TLS verified against the cluster CA, with the admin's client certificate, through the host's forward", async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    forwards.length = 0;
    expect(await readyzThrough(remote(), '127.0.0.1', port, creds)).toEqual({ ok: true, tls: true, seen: 'ok' });
    expect(forwards).toEqual([`127.0.0.1:${port}`]);
  });

  it("not ready: the status and the body's last line (the apiserver names its failing check there)", async () => {
    reply = (res) => res.writeHead(500).end('[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n');
    expect(await readyzThrough(remote(), '127.0.0.1', port, creds)).toEqual({ ok: false, tls: true, seen: 'HTTP 500: readyz check failed' });
  });

  it('a server whose certificate is not of the cluster CA: no TLS, in the words of the TLS error', async () => {
    reply = (res) => res.writeHead(200).end('ok');
    const r = await readyzThrough(remote(), '127.0.0.1', port, { ...creds, ca: foreign.ca });
    expect(r).toMatchObject({ ok: false, tls: false });
    expect(r.seen).toMatch(/certificate/);
  });

  it("an address the serving certificate does not name fails the check, as kubectl's would", async () => {
    const r = await readyzThrough(remote(), 'localhost', port, creds);
    expect(r).toMatchObject({ ok: false, tls: false });
    expect(r.seen).toMatch(/altnames|IP|localhost/i);
  });

  it('the forward refused by the host: its words', async () => {
    const r = await readyzThrough(remote({ refuse: 'direct-tcpip to 10.0.0.12:6443 from k3s-prod-2: Connection refused' }), '10.0.0.12', 6443, creds);
    expect(r).toEqual({ ok: false, tls: false, seen: 'direct-tcpip to 10.0.0.12:6443 from k3s-prod-2: Connection refused' });
  });

  it('a server that accepts and never answers is left after the budget, its TLS seen', async () => {
    reply = () => undefined;
    const t0 = Date.now();
    // 2 s leaves the handshake time under CI's lab load; the budget is what ends the wait.
    const r = await readyzThrough(remote(), '127.0.0.1', port, creds, 2000);
    expect(r).toEqual({ ok: false, tls: true, seen: 'no answer within 2 s' });
    expect(Date.now() - t0).toBeLessThan(4_000);
  });

  it('a connection that cannot forward ports says so', async () => {
    const { forward: _none, ...plain } = remote();
    expect(await readyzThrough(plain, '127.0.0.1', port, creds)).toEqual({ ok: false, tls: false, seen: 'the connection to k3s-prod-2 cannot forward ports' });
  });
});

describe('getThrough keeps its connection between GETs', () => {
  it('a second GET through the same SSH connection reuses the first one: one forward, one TLS handshake', async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    forwards.length = 0;
    let handshakes = 0;
    const count = () => handshakes++;
    server.on('secureConnection', count);
    try {
      const r = remote();
      for (let i = 0; i < 3; i++) expect(await getThrough(r, '127.0.0.1', port, '/readyz', creds)).toEqual({ tls: true, status: 200, body: 'ok' });
      expect(forwards).toEqual([`127.0.0.1:${port}`]);
      expect(handshakes).toBe(1);
      // Another run's connection (another Remote) has connections of its own.
      await getThrough(remote(), '127.0.0.1', port, '/readyz', creds);
      expect(forwards).toHaveLength(2);
      // Any other address (the VIP, another server's): whether it answers now, so a connection each time (here
      // one the serving certificate does not name, so each is refused after its handshake).
      forwards.length = 0;
      for (let i = 0; i < 2; i++) await getThrough(r, 'localhost', port, '/readyz', creds);
      expect(forwards).toEqual([`localhost:${port}`, `localhost:${port}`]);
    } finally {
      server.off('secureConnection', count);
    }
  });

  it('a kept connection the server closed meanwhile: the GET is asked again on a new one, and answered', async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    forwards.length = 0;
    const r = remote();
    expect(await getThrough(r, '127.0.0.1', port, '/readyz', creds)).toMatchObject({ status: 200 });
    // The server drops its idle keep-alive connections (as an apiserver restarting does).
    server.closeIdleConnections();
    expect(await getThrough(r, '127.0.0.1', port, '/readyz', creds)).toEqual({ tls: true, status: 200, body: 'ok' });
    expect(forwards).toHaveLength(2);
  });

  it('a GET given up on takes its connection with it: the next one opens another', async () => {
    forwards.length = 0;
    const r = remote();
    reply = () => undefined;
    expect(await getThrough(r, '127.0.0.1', port, '/readyz', creds, 2000)).toMatchObject({ seen: 'no answer within 2 s' });
    reply = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    expect(await getThrough(r, '127.0.0.1', port, '/readyz', creds)).toEqual({ tls: true, status: 200, body: 'ok' });
    expect(forwards).toHaveLength(2);
  });
});

describe("getThrough's certificate flag, from Node's TLS error code", () => {
  it('a server whose certificate is of another CA: certificate', async () => {
    reply = (res) => res.writeHead(200).end('ok');
    expect(await getThrough(remote(), '127.0.0.1', port, '/livez', { ...creds, ca: foreign.ca })).toMatchObject({ tls: false, certificate: true });
  });

  it('an address the serving certificate does not name: certificate', async () => {
    reply = (res) => res.writeHead(200).end('ok');
    expect(await getThrough(remote(), '10.0.0.9', port, '/livez', creds)).toMatchObject({ tls: false, certificate: true });
  });

  it("a kubeconfig whose key does not parse: said in words, the host's answer not waited for", async () => {
    reply = (res) => res.writeHead(200).end('ok');
    const r = await getThrough(
      remote(),
      '127.0.0.1',
      port,
      '/livez',
      { ...creds, key: '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n' },
      5_000,
    );
    expect(r).toMatchObject({ tls: false, certificate: false });
    expect(r.status === undefined && r.seen).toMatch(/^the kubeconfig's credentials do not load: /);
  });

  it('a refused forward and no answer are not the certificate', async () => {
    expect(await getThrough(remote({ refuse: 'Connection refused' }), '10.0.0.9', 6443, '/livez', creds)).toEqual({
      tls: false,
      seen: 'Connection refused',
      certificate: false,
    });
    // The budget leaves the handshake time under load (CI runs labs beside this): tls is true once it completed.
    reply = () => undefined;
    expect(await getThrough(remote(), '127.0.0.1', port, '/livez', creds, 2000)).toEqual({ tls: true, seen: 'no answer within 2 s', certificate: false });
  });
});

describe("the VIP gate's look from a server through its SSH connection (livezThrough)", () => {
  it('200 `ok` is an answer, asked at the VIP through the host', async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    forwards.length = 0;
    expect(await livezThrough(remote(), '127.0.0.1', port, creds)).toEqual({ ok: true });
    expect(forwards).toEqual([`127.0.0.1:${port}`]);
  });

  it("an HTTP error with a Status body is an answer (the certificate verified), as kubectl's `Error from server (Forbidden)`", async () => {
    reply = (res) =>
      res.writeHead(403, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'forbidden: User "system:anonymous" cannot get path "/livez"',
          reason: 'Forbidden',
          code: 403,
        }),
      );
    expect(await livezThrough(remote(), '127.0.0.1', port, creds)).toEqual({ ok: true });
  });

  it('a serving certificate that does not name the VIP: no answer, the certificate flagged, in the words of the TLS error', async () => {
    reply = (res) => res.writeHead(200).end('ok');
    const r = await livezThrough(remote(), '10.0.0.9', port, creds);
    expect(r).toMatchObject({ ok: false, certificate: true });
    expect(r.ok || r.said).toContain('10.0.0.9');
  });

  it('no answer within the budget and a refused forward: not the certificate', async () => {
    reply = () => undefined;
    expect(await livezThrough(remote(), '127.0.0.1', port, creds, 300)).toEqual({ ok: false, certificate: false, said: 'no answer within 0.3 s' });
    const refused = 'direct-tcpip to 10.0.0.9:6443 from k3s-prod-2: Connection refused';
    expect(await livezThrough(remote({ refuse: refused }), '10.0.0.9', 6443, creds)).toEqual({ ok: false, certificate: false, said: refused });
  });

  it('a 200 that is not `ok` is not an answer, as kubectl printing it is not', async () => {
    reply = (res) => res.writeHead(200).end('[-]ping failed\n');
    expect(await livezThrough(remote(), '127.0.0.1', port, creds)).toEqual({ ok: false, certificate: false, said: 'HTTP 200: [-]ping failed' });
  });
});
