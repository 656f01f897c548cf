// A small HTTPS server on 127.0.0.1 standing for a server's Kubernetes API, behind the run's way to it
// (src/kube/api-access.ts clusterApi): a CA and a serving certificate for 127.0.0.1 made with openssl, a state
// folder whose admin kubeconfig trusts that CA, and a fake Remote whose forwards reach the server (as ssh
// direct-tcpip reaches 127.0.0.1:6443 on a server).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { CauseError } from '../../src/errors.ts';
import type { ExecResult, Remote } from '../../src/transport/types.ts';

export interface KubeApiFixture {
  /** A state folder with the admin kubeconfig (trusting the fixture's CA, or with `otherCa` another one), or none. */
  stateDir(o?: { kubeconfig?: boolean; otherCa?: boolean }): string;
  /** A Remote of `host` whose forwards reach the API; `exec` answers with `exec` (the default: refused). */
  remote(
    host: string,
    o?: { exec?: (command: string) => Pick<ExecResult, 'code' | 'stdout' | 'stderr'>; refuse?: boolean },
  ): Remote & { forwards: string[]; commands: string[] };
  close(): Promise<void>;
}

export function answer(res: ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A request's body, whole (a PATCH's patch). */
export const bodyOf = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let b = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (b += d));
    req.on('end', () => resolve(b));
  });

export const statusOf = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

export async function kubeApiFixture(route: (req: IncomingMessage, res: ServerResponse) => void): Promise<KubeApiFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'kube-api-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=ca', '-days', '1');
  openssl('req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.pem', '-subj', '/CN=ca', '-days', '1');
  openssl('req', ...ec, '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=kube-apiserver');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl('x509', '-req', '-in', 'api.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'api.pem', '-days', '1', '-extfile', 'san.ext');
  const server = createServer({ key: readFileSync(join(dir, 'api.key')), cert: readFileSync(join(dir, 'api.pem')) }, route);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const kubeconfigOf = (ca: string) =>
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: default',
      `  cluster: { server: 'https://192.168.2.9:6443', certificate-authority-data: ${ca} }`,
      'users:',
      '- name: default',
      '  user: { token: admin-token-not-printed }',
      'contexts:',
      '- name: default',
      '  context: { cluster: default, user: default }',
      'current-context: default',
      '',
    ].join('\n');
  const caOf = (file: string) => readFileSync(join(dir, file)).toString('base64');
  return {
    stateDir: (o = {}) => {
      const state = mkdtempSync(join(dir, 'state-'));
      if (o.kubeconfig !== false) writeFileSync(join(state, 'kubeconfig'), kubeconfigOf(caOf(o.otherCa ? 'other-ca.pem' : 'ca.pem')));
      return state;
    },
    remote: (host, o = {}) => {
      const forwards: string[] = [];
      const commands: string[] = [];
      return {
        host,
        forwards,
        commands,
        exec: async (command: string) => {
          commands.push(command);
          if (!o.exec) throw new Error('no commands here');
          return { command, durationMs: 1, ...o.exec(command) };
        },
        close: async () => {},
        forward: (to: string, p: number) =>
          new Promise<Duplex>((resolve, reject) => {
            forwards.push(`${to}:${p}`);
            if (o.refuse)
              return reject(new CauseError('SSH_FORWARD_FAILED', { host, evidence: { seen: `direct-tcpip to ${to}:${p} from ${host}: Connection refused` } }));
            const s = connect(port, '127.0.0.1', () => resolve(s));
            s.once('error', reject);
          }),
      };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
