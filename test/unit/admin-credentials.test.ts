// The state folder's kubeconfig read as credentials for the engine's own GETs (src/kube/admin-credentials.ts),
// without @kubernetes/client-node: what it reads is what that client reads from the same file (checked against
// the real client here), and what it cannot use is a named cause.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { apiCredentials } from '../../src/kube/admin-credentials.ts';
import { CauseError } from '../../src/errors.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** An admin kubeconfig as k3s writes it, beside another context that is not the current one. */
const k3sStyle = (over: { user?: Record<string, string>; cluster?: Record<string, string>; current?: string } = {}) =>
  `# reach the API through the bastion: ssh -L 6443:10.0.0.9:6443 ops@bastion\n${stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'other', cluster: { server: 'https://192.0.2.1:6443', 'certificate-authority-data': b64('OTHER CA') } },
      { name: 'default', cluster: { server: 'https://10.0.0.9:6443', 'certificate-authority-data': b64('CLUSTER CA'), ...over.cluster } },
    ],
    users: [
      { name: 'other', user: { token: 'not this one' } },
      { name: 'default', user: { 'client-certificate-data': b64('ADMIN CERT'), 'client-key-data': b64('ADMIN KEY'), ...over.user } },
    ],
    contexts: [
      { name: 'other', context: { cluster: 'other', user: 'other' } },
      { name: 'default', context: { cluster: 'default', user: 'default' } },
    ],
    'current-context': over.current ?? 'default',
  })}`;

function stateDirWith(text?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'admin-creds-'));
  if (text !== undefined) writeFileSync(join(dir, 'kubeconfig'), text, { mode: 0o600 });
  return dir;
}

function causeOf(dir: string): CauseError {
  try {
    apiCredentials(dir);
  } catch (err) {
    if (err instanceof CauseError) return err;
    throw err;
  }
  throw new Error('no cause');
}

describe("the admin kubeconfig's credentials, read without the API client", () => {
  it("the current context's CA, client certificate and key, as @kubernetes/client-node reads them from the same file", () => {
    const dir = stateDirWith(k3sStyle());
    const creds = apiCredentials(dir);
    expect(creds).toEqual({ ca: 'CLUSTER CA', cert: 'ADMIN CERT', key: 'ADMIN KEY', token: undefined });
    const kc = new KubeConfig();
    kc.loadFromFile(join(dir, 'kubeconfig'));
    const pem = (d?: string) => (d ? Buffer.from(d, 'base64').toString() : undefined);
    expect({ ca: pem(kc.getCurrentCluster()?.caData), cert: pem(kc.getCurrentUser()?.certData), key: pem(kc.getCurrentUser()?.keyData) }).toEqual({
      ca: creds.ca,
      cert: creds.cert,
      key: creds.key,
    });
  });

  it('a token user and a CA in a file of its own', () => {
    const dir = stateDirWith();
    writeFileSync(join(dir, 'ca.pem'), 'CA FROM FILE');
    writeFileSync(
      join(dir, 'kubeconfig'),
      k3sStyle({ current: 'default', cluster: { 'certificate-authority-data': '', 'certificate-authority': join(dir, 'ca.pem') } }),
    );
    expect(apiCredentials(dir).ca).toBe('CA FROM FILE');
    writeFileSync(join(dir, 'kubeconfig'), k3sStyle({ user: { 'client-certificate-data': '', 'client-key-data': '', token: 'T0KEN' } }));
    expect(apiCredentials(dir)).toMatchObject({ ca: 'CLUSTER CA', token: 'T0KEN' });
  });

  it('no kubeconfig yet is KUBECONFIG_NOT_FETCHED', () => {
    const err = causeOf(stateDirWith());
    expect(err.causeId).toBe('KUBECONFIG_NOT_FETCHED');
    expect(err.evidence.seen).toMatch(/kubeconfig does not exist$/);
  });

  it('what cannot be used is STATE_FILE_CORRUPT, saying why', () => {
    const seen = (text: string) => causeOf(stateDirWith(text)).evidence.seen;
    expect(seen('clusters: [unclosed\n')).toMatch(/kubeconfig is not a kubeconfig: /);
    expect(seen(k3sStyle({ current: 'nowhere' }))).toMatch(/its current cluster has no certificate-authority-data$/);
    expect(seen(k3sStyle({ cluster: { 'certificate-authority-data': '' } }))).toMatch(/its current cluster has no certificate-authority-data$/);
    expect(seen(k3sStyle({ user: { 'client-key-data': '' } }))).toMatch(/neither client-certificate-data and client-key-data nor a token$/);
    const dir = stateDirWith();
    mkdirSync(join(dir, 'kubeconfig'));
    expect(causeOf(dir)).toMatchObject({ causeId: 'STATE_FILE_CORRUPT' });
    expect(causeOf(dir).evidence.seen).toMatch(/is a folder, not a file/);
  });
});

describe('read at every GET, parsed once per content', () => {
  it('gives the same credentials while the file is unchanged, and the new ones at once after a rewrite', () => {
    const dir = stateDirWith(k3sStyle());
    const first = apiCredentials(dir);
    expect(apiCredentials(dir)).toBe(first);
    // k3s-founder rewrites the kubeconfig (a new cluster, the same path): the next read takes the new file.
    writeFileSync(join(dir, 'kubeconfig'), k3sStyle({ cluster: { 'certificate-authority-data': b64('NEW CA') } }), { mode: 0o600 });
    expect(apiCredentials(dir)).toMatchObject({ ca: 'NEW CA', cert: 'ADMIN CERT' });
    // A file made unusable is named, not answered from the last good read.
    writeFileSync(join(dir, 'kubeconfig'), k3sStyle({ user: { 'client-certificate-data': '', 'client-key-data': '' } }), { mode: 0o600 });
    expect(() => apiCredentials(dir)).toThrow(CauseError);
  });
});
