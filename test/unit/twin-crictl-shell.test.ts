// The crictl twin's `exec … sh -c SCRIPT`: the host's sh runs the script, `cilium-dbg` and `cilium-health` in it
// are the container's (wrappers that hand each call to the crictl process and block on a FIFO for its answer).
// The agent's sockets are served here under a test root, as the agent twin serves them on a node.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { CILIUM_SOCKET, HEALTH_SOCKET, runCrictl } from '../../lab/twin/crictl.ts';

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).forEach((f) => f()));

async function serve(path: string, answer: (req: http.IncomingMessage) => unknown): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answer(req)));
  });
  await new Promise<void>((r) => server.listen(path, r));
  cleanup.push(() => server.close());
}

async function agentRoot(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'crictl-shell-'));
  cleanup.push(() => rmSync(root, { recursive: true, force: true }));
  const container = {
    id: 'c0ffee0123456789',
    name: 'cilium-agent',
    podName: 'cilium-x',
    podNamespace: 'kube-system',
    podUid: 'u-1',
    image: 'quay.io/cilium/cilium:v1.19.5',
    createdAt: new Date().toISOString(),
  };
  await serve(join(root, CILIUM_SOCKET), (req) => (req.url === '/twin/v1/container' ? container : { 'kube-proxy-replacement': { mode: 'True' } }));
  await serve(join(root, HEALTH_SOCKET), () => ({ local: { name: 'n1' }, nodes: [{ name: 'n1' }] }));
  return root;
}

async function run(root: string, script: string) {
  let out = '';
  let err = '';
  const code = await runCrictl(
    ['exec', '--name', 'cilium-agent', '--state', 'running', '-q', 'sh', '-c', script],
    { out: (t) => (out += t), err: (t) => (err += t), now: () => new Date() },
    root,
  );
  return { code, out, err };
}

it("runs the script in the host's sh with the container's cilium-dbg and cilium-health, their output and status passed on in order", async () => {
  const root = await agentRoot();
  const r = await run(
    root,
    'cilium-dbg status -o json; echo "dbg=$?"; cilium-health status --probe -o json; echo "health=$?"; cilium-dbg nonsense; echo "bad=$?" >&2; exit 3',
  );
  expect(r.code).toBe(3);
  const parts = r.out.split(/^(dbg|health)=/m);
  expect(JSON.parse(parts[0])).toEqual({ 'kube-proxy-replacement': { mode: 'True' } });
  expect(r.out).toMatch(/^dbg=0$/m);
  expect(JSON.parse(r.out.slice(r.out.indexOf('dbg=0\n') + 6, r.out.indexOf('health=')))).toMatchObject({ local: { name: 'n1' } });
  expect(r.out).toMatch(/^health=0$/m);
  // A command the container does not have: containerd's words, status 126, as `crictl exec ID cmd` gives them.
  expect(r.err).toContain('executable file not found in $PATH');
  expect(r.err).toMatch(/bad=126/);
});

it('answers five calls in a row, each through its own call folder', async () => {
  const root = await agentRoot();
  const r = await run(root, 'for i in 1 2 3 4 5; do cilium-dbg status -o json >/dev/null || exit 9; done; echo done');
  expect(r).toMatchObject({ code: 0, out: 'done\n' });
});
