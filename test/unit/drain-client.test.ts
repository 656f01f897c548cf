// The drain's API calls (src/kube/drain-client.ts) through the run's way to the API (src/kube/api-access.ts
// clusterApi), against a small HTTPS server on 127.0.0.1 standing for a server's API: the state folder's
// kubeconfig redirected to the tunnel's local port, whose connections a fake Remote forwards to that server;
// TLS verified against the kubeconfig's CA (a certificate of another CA is refused); the eviction's real 429
// Status parsed into the PodDisruptionBudget that refused it; a merge patch for the cordon; the absent
// kubeconfig and a refused forward as their named causes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef } from '../../src/engine/host-ref.ts';
import { CauseError } from '../../src/errors.ts';
import { CORDONED_BY } from '../../src/k3s/drain.ts';
import { clusterApi } from '../../src/kube/api-access.ts';
import { apiFailure } from '../../src/kube/api-failure.ts';
import { clientDrainApi } from '../../src/kube/drain-client.ts';
import type { Remote } from '../../src/transport/types.ts';
import { answer, statusOf } from '../support/kube-api-fixture.ts';

const via: HostRef = { name: 'k3s-prod-1', address: '192.168.2.10', role: 'server', founder: true };

/** The Status the API answers an eviction a PodDisruptionBudget refuses with (pkg/registry/core/pod/storage/eviction.go). */
const PDB_429 = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: "Cannot evict pod as it would violate the pod's disruption budget.",
  reason: 'TooManyRequests',
  details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }] },
  code: 429,
};

let dir: string;
let server: Server;
let apiPort: number;
const seen: { method: string; url: string; contentType?: string; body: string; auth?: string }[] = [];
let node: { metadata: { name: string; annotations: Record<string, string> }; spec: { unschedulable?: boolean } };

function openssl(...args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function route(req: IncomingMessage, body: string, res: ServerResponse) {
  const url = req.url ?? '';
  if (url === '/api/v1/nodes/k3s-prod-2' && req.method === 'GET') return answer(res, 200, node);
  if (url === '/api/v1/nodes/k3s-prod-2' && req.method === 'PATCH') {
    const patch = JSON.parse(body);
    node.spec.unschedulable = patch.spec.unschedulable;
    for (const [k, v] of Object.entries(patch.metadata.annotations as Record<string, string | null>)) {
      if (v === null) delete node.metadata.annotations[k];
      else node.metadata.annotations[k] = v;
    }
    return answer(res, 200, node);
  }
  if (url === '/api/v1/nodes/k3s-prod-9')
    return answer(res, 403, statusOf(403, 'Forbidden', 'nodes "k3s-prod-9" is forbidden: User "ops" cannot get resource "nodes"'));
  if (url.startsWith('/api/v1/pods?'))
    return answer(res, 200, {
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {},
      items: [
        {
          metadata: {
            name: 'web-1',
            namespace: 'shop',
            uid: 'u1',
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'r', controller: true }],
          },
          status: { phase: 'Running' },
        },
        {
          metadata: {
            name: 'cilium-x',
            namespace: 'kube-system',
            uid: 'u2',
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'cilium', uid: 'd', controller: true }],
          },
          status: { phase: 'Running' },
        },
        {
          metadata: { name: 'kube-vip-k3s-prod-2', namespace: 'kube-system', uid: 'u3', annotations: { 'kubernetes.io/config.mirror': 'abc' } },
          status: { phase: 'Running' },
        },
      ],
    });
  if (url === '/api/v1/namespaces/shop/pods/web-1/eviction') return answer(res, 429, PDB_429);
  if (url === '/api/v1/namespaces/shop/pods/db-0/eviction')
    return answer(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
  if (url === '/api/v1/namespaces/shop/pods/db-0') return answer(res, 404, statusOf(404, 'NotFound', 'pods "db-0" not found'));
  if (url === '/api/v1/namespaces/shop/pods/web-1') return answer(res, 200, { metadata: { name: 'web-1', namespace: 'shop', uid: 'u1' } });
  answer(res, 500, statusOf(500, 'InternalError', `no route ${req.method} ${url}`));
}

/** A Remote whose forwards reach the test's API server (as ssh direct-tcpip reaches 127.0.0.1:6443 on a server). */
function forwardingRemote(port = () => apiPort): Remote & { forwards: string[] } {
  const forwards: string[] = [];
  return {
    host: via.name,
    forwards,
    exec: () => Promise.reject(new Error('no commands here')),
    close: async () => {},
    forward: (host: string, p: number) =>
      new Promise<Duplex>((resolve, reject) => {
        forwards.push(`${host}:${p}`);
        const s = connect(port(), '127.0.0.1', () => resolve(s));
        s.once('error', reject);
      }),
  };
}

function stateDirWith(caFile: string): string {
  const state = mkdtempSync(join(dir, 'state-'));
  const ca = readFileSync(join(dir, caFile)).toString('base64');
  writeFileSync(
    join(state, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: default',
      '  cluster:',
      '    server: https://192.168.2.9:6443',
      `    certificate-authority-data: ${ca}`,
      'users:',
      '- name: default',
      '  user:',
      '    token: admin-token-not-printed',
      'contexts:',
      '- name: default',
      '  context: { cluster: default, user: default }',
      'current-context: default',
      '',
    ].join('\n'),
  );
  return state;
}

const ctxOf = (remote: Remote, stateDir: string) => ({ stateDir, remote: () => remote });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'drain-client-'));
  for (const ca of ['ca', 'other-ca'])
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.pem`,
      '-subj',
      `/CN=${ca}`,
      '-days',
      '1',
    );
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=kube-apiserver');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl('x509', '-req', '-in', 'api.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'api.pem', '-days', '1', '-extfile', 'san.ext');
  server = createServer({ key: readFileSync(join(dir, 'api.key')), cert: readFileSync(join(dir, 'api.pem')) }, (req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, contentType: req.headers['content-type'], body, auth: req.headers.authorization });
      route(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  apiPort = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('clusterApi and clientDrainApi', () => {
  it('reaches the API through the forwarded port with TLS verified, once per run and host', async () => {
    node = { metadata: { name: 'k3s-prod-2', annotations: {} }, spec: {} };
    const remote = forwardingRemote();
    const ctx = ctxOf(remote, stateDirWith('ca.pem'));
    const kc = await clusterApi(ctx, via);
    expect(await clusterApi(ctx, via)).toBe(kc);
    expect(kc.getCurrentCluster()).toMatchObject({ server: expect.stringMatching(/^https:\/\/127\.0\.0\.1:\d+$/), skipTLSVerify: false });
    const api = clientDrainApi(kc);
    expect(await api.readNode('k3s-prod-2')).toEqual({ unschedulable: false });
    expect(remote.forwards).toEqual(['127.0.0.1:6443']);
    expect(seen.at(-1)?.auth).toBe('Bearer admin-token-not-printed');
  });

  it('cordons and uncordons with one merge patch each, marking the node', async () => {
    node = { metadata: { name: 'k3s-prod-2', annotations: {} }, spec: {} };
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('ca.pem')), via));
    await api.setUnschedulable('k3s-prod-2', true, 'run-1');
    const patch = seen.at(-1)!;
    expect(patch).toMatchObject({ method: 'PATCH', url: '/api/v1/nodes/k3s-prod-2', contentType: 'application/merge-patch+json' });
    expect(JSON.parse(patch.body)).toEqual({ spec: { unschedulable: true }, metadata: { annotations: { [CORDONED_BY]: 'run-1' } } });
    expect(await api.readNode('k3s-prod-2')).toEqual({ unschedulable: true, cordonedBy: 'run-1' });
    await api.setUnschedulable('k3s-prod-2', false, null);
    expect(await api.readNode('k3s-prod-2')).toEqual({ unschedulable: false });
  });

  it("lists the node's pods by field selector, with what a drain filters on", async () => {
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('ca.pem')), via));
    const pods = await api.podsOn('k3s-prod-2');
    expect(seen.at(-1)?.url).toBe('/api/v1/pods?fieldSelector=spec.nodeName%3Dk3s-prod-2');
    expect(pods).toEqual([
      { namespace: 'shop', name: 'web-1', uid: 'u1', phase: 'Running', controllerKind: 'ReplicaSet', mirror: false },
      { namespace: 'kube-system', name: 'cilium-x', uid: 'u2', phase: 'Running', controllerKind: 'DaemonSet', mirror: false },
      { namespace: 'kube-system', name: 'kube-vip-k3s-prod-2', uid: 'u3', phase: 'Running', mirror: true },
    ]);
  });

  it("parses the eviction's 429 Status into its message and the DisruptionBudget cause", async () => {
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('ca.pem')), via));
    expect(await api.evict({ namespace: 'shop', name: 'web-1' })).toEqual({
      ok: false,
      status: 429,
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      causes: [{ type: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }],
    });
    const post = seen.at(-1)!;
    expect(post.method).toBe('POST');
    expect(JSON.parse(post.body)).toEqual({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-1', namespace: 'shop' } });
    expect(await api.evict({ namespace: 'shop', name: 'db-0' })).toEqual({ ok: true });
  });

  it('counts a pod gone on 404 or when another uid holds its name', async () => {
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('ca.pem')), via));
    expect(await api.podGone({ namespace: 'shop', name: 'db-0', uid: 'u9' })).toBe(true);
    expect(await api.podGone({ namespace: 'shop', name: 'web-1', uid: 'u1' })).toBe(false);
    expect(await api.podGone({ namespace: 'shop', name: 'web-1', uid: 'u0' })).toBe(true);
  });

  it('names any other HTTP failure with its status and message, never the token', async () => {
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('ca.pem')), via));
    const err = await api.readNode('k3s-prod-9').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect((err as CauseError).causeId).toBe('KUBE_API_FAILED');
    expect((err as CauseError).evidence.seen).toBe(
      'GET /api/v1/nodes/k3s-prod-9: HTTP 403 nodes "k3s-prod-9" is forbidden: User "ops" cannot get resource "nodes"',
    );
    expect(JSON.stringify((err as CauseError).toJSON())).not.toContain('admin-token');
  });

  it('refuses a serving certificate of another CA', async () => {
    const api = clientDrainApi(await clusterApi(ctxOf(forwardingRemote(), stateDirWith('other-ca.pem')), via));
    const err = (await api.readNode('k3s-prod-2').catch((e: unknown) => e)) as CauseError;
    expect(err.causeId).toBe('KUBE_API_FAILED');
    expect(err.evidence.seen).toMatch(/no answer: .*(certificate|self.signed|issuer)/i);
  });

  it("names a refused forward as the SSH connection's cause", async () => {
    const refused = new CauseError('SSH_FORWARD_FAILED', {
      host: via.name,
      evidence: { seen: 'direct-tcpip to 127.0.0.1:6443 from k3s-prod-1: Connection refused' },
    });
    const remote: Remote = { ...forwardingRemote(), forward: () => Promise.reject(refused) };
    const api = clientDrainApi(await clusterApi(ctxOf(remote, stateDirWith('ca.pem')), via));
    await expect(api.readNode('k3s-prod-2')).rejects.toBe(refused);
  });

  it('stops with KUBECONFIG_NOT_FETCHED when the state folder holds no kubeconfig, and tries again next time', async () => {
    const remote = forwardingRemote();
    const empty = mkdtempSync(join(dir, 'empty-'));
    const err = (await clusterApi(ctxOf(remote, empty), via).catch((e: unknown) => e)) as CauseError;
    expect(err.causeId).toBe('KUBECONFIG_NOT_FETCHED');
    expect(err.evidence.seen).toBe(`${join(empty, 'kubeconfig')} does not exist`);
    writeFileSync(join(empty, 'kubeconfig'), readFileSync(join(stateDirWith('ca.pem'), 'kubeconfig')));
    await expect(clusterApi(ctxOf(remote, empty), via)).resolves.toBeDefined();
  });
});

describe('apiFailure', () => {
  it('reads a Status given as text, as an object, or no body at all', () => {
    const text = { code: 429, body: JSON.stringify(PDB_429) };
    expect(apiFailure(text)?.causes).toEqual([{ type: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }]);
    expect(apiFailure({ code: 429, body: PDB_429 })?.message).toBe("Cannot evict pod as it would violate the pod's disruption budget.");
    expect(apiFailure({ code: 401, body: undefined })).toEqual({ status: 401, message: 'Unauthorized', causes: [] });
    expect(apiFailure({ code: 502, body: '<html>Bad Gateway</html>' })?.message).toBe('<html>Bad Gateway</html>');
    expect(apiFailure(new Error('socket hang up'))).toBeUndefined();
  });
});
