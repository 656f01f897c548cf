// A gate's read through the run's SSH connection (src/kube/api-read.ts): the API's JSON as `k3s kubectl get
// -o json` would print it, an error in kubectl's words, and `k3s kubectl` on the server while the state
// folder holds no kubeconfig. Against a small HTTPS server standing for a server's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRead } from '../../src/kube/api-read.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const server = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };
const DS = { kind: 'DaemonSet', apiVersion: 'apps/v1', metadata: { name: 'cilium', namespace: 'kube-system', generation: 3 } };
const READ = { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium', kubectl: 'get daemonset -n kube-system cilium -o json' };

let api: KubeApiFixture;
let served: 'ds' | 'gone' | 'broken' = 'ds';
const asked: { url?: string; auth?: string }[] = [];

beforeAll(async () => {
  api = await kubeApiFixture((req, res) => {
    asked.push({ url: req.url, auth: req.headers.authorization });
    if (served === 'broken') {
      res.writeHead(502);
      return void res.end('bad gateway\nupstream down');
    }
    if (req.url === READ.path && served === 'ds') return answer(res, 200, DS);
    answer(res, 404, statusOf(404, 'NotFound', 'daemonsets.apps "cilium" not found'));
  });
});
afterAll(() => api.close());

function context(o: { kubeconfig?: boolean; refuse?: boolean } = {}) {
  const { ctx } = fixture({ check: false, hosts: [server] });
  const remote = api.remote('server-1', {
    refuse: o.refuse,
    exec: () => ({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}', stderr: '' }),
  });
  return { remote, ctx: { ...ctx, stateDir: api.stateDir({ kubeconfig: o.kubeconfig }), remote: () => remote } };
}

describe('apiRead', () => {
  it("answers with the API's JSON through the server's connection, with the kubeconfig's credentials; no command on the server", async () => {
    served = 'ds';
    asked.length = 0;
    const { ctx, remote } = context();
    const r = await apiRead(ctx, server, READ);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(DS);
    expect(asked).toEqual([{ url: READ.path, auth: 'Bearer admin-token-not-printed' }]);
    expect(remote.forwards).toEqual(['127.0.0.1:6443']);
    expect(remote.commands).toEqual([]);
  });

  it("an object that is not there fails as kubectl's does: Error from server (NotFound), the Status's message", async () => {
    served = 'gone';
    const r = await apiRead(context().ctx, server, READ);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error from server (NotFound): daemonsets.apps "cilium" not found' });
  });

  it('an answer that is no Status names its HTTP status and first line', async () => {
    served = 'broken';
    const r = await apiRead(context().ctx, server, READ);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error from server: an error on the server (HTTP 502): bad gateway' });
  });

  it("no answer (the forward refused: nothing listening, another cluster's certificate) is the server's own kubectl's to give", async () => {
    const { ctx, remote } = context({ refuse: true });
    const r = await apiRead(ctx, server, READ);
    expect(r).toMatchObject({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}' });
    expect(remote.commands).toEqual([`k3s kubectl ${READ.kubectl}`]);
  });

  it('without a kubeconfig in the state folder: `k3s kubectl` on the server, as root', async () => {
    const { ctx, remote } = context({ kubeconfig: false });
    const r = await apiRead(ctx, server, READ);
    expect(r).toMatchObject({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}' });
    expect(remote.commands).toEqual([`k3s kubectl ${READ.kubectl}`]);
    expect(remote.forwards).toEqual([]);
  });
});
