// The agent gate: a Node counts only with a live heartbeat (its Lease renewed within its duration), both read
// through the founder's Kubernetes API over the run's tunnel.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRegistered, leaseFreshness } from '../../phases/k3s/agent-gate.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const T = Date.parse('2026-12-01T10:00:00Z');
const agent = { name: 'agent-1', address: '10.0.0.20', role: 'agent' as const, founder: false };
const founder = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };

describe('leaseFreshness', () => {
  it('fresh within the lease duration, stale after it, with its age in the evidence', () => {
    expect(leaseFreshness({ renewTime: '2026-12-01T09:59:51.123000Z', leaseDurationSeconds: 40 }, T)).toEqual({
      fresh: true,
      seen: 'its Lease was renewed 9 s ago',
    });
    const stale = leaseFreshness({ renewTime: '2026-12-01T09:50:00.000000Z', leaseDurationSeconds: 40 }, T);
    expect(stale.fresh).toBe(false);
    expect(stale.seen).toBe(
      'its Node exists, but its Lease was last renewed 600 s ago (2026-12-01T09:50:00.000000Z; it lasts 40 s): no kubelet of this name is running',
    );
    expect(leaseFreshness(undefined, T)).toEqual({ fresh: false, seen: 'its Node exists, but no Lease in kube-node-lease: its kubelet never reported' });
    expect(leaseFreshness({ renewTime: 'soon' }, T).fresh).toBe(false);
  });
});

describe('agentRegistered', () => {
  // The founder's API (its Node and Lease reads, through the run's tunnel): a small HTTPS server standing for it.
  let api: KubeApiFixture;
  let served: { nodeMachine: string; lease: string } = { nodeMachine: 'm-1', lease: '' };
  beforeAll(async () => {
    api = await kubeApiFixture((req, res) => {
      if (req.url === '/api/v1/nodes/agent-1')
        return answer(res, 200, { kind: 'Node', apiVersion: 'v1', metadata: { name: 'agent-1' }, status: { nodeInfo: { machineID: served.nodeMachine } } });
      if (req.url === '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/agent-1')
        return answer(res, 200, { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { name: 'agent-1' }, spec: JSON.parse(served.lease) });
      answer(res, 404, statusOf(404, 'NotFound', `no route ${req.url}`));
    });
  });
  afterAll(() => api.close());

  /** The agent's host: machine `hostMachine`, its journal `journal`. */
  const agentHost = ({ hostMachine = 'm-1', journal = '' }) => ({
    host: 'agent-1',
    close: async () => undefined,
    exec: async (cmd: string, o?: { stdin?: string }) => {
      const out = (stdout: string, code = 0) => ({ command: cmd, stdout, stderr: '', code, durationMs: 1 });
      // The machine-id is a probe (a batch on stdin): run by a real sh, the host's file standing in as printf.
      if (cmd === 'sh -s') {
        const r = spawnSync('sh', ['-s'], { input: String(o?.stdin).replace('cat /etc/machine-id', `printf '%s\\n' ${hostMachine}`), encoding: 'utf8' });
        return out(r.stdout, r.status ?? 1);
      }
      return out(journal); // journalctl
    },
  });
  /** The Node's kubelet on machine `nodeMachine`, its Lease `lease`; the host `hostMachine`, its journal `journal`. */
  const run = async (lease: string, { nodeMachine = 'm-1', hostMachine = 'm-1', journal = '' } = {}) => {
    served = { nodeMachine, lease };
    const { ctx } = fixture({ check: false, hosts: [founder, agent] });
    const inventory = { derived: { servers: [founder], agents: [agent], founder } } as any;
    const founderRemote = api.remote('server-1');
    const ended = new AbortController();
    ended.abort(); // one look, then the budget is over
    return agentRegistered
      .run(
        agent,
        {
          ...ctx,
          inventory,
          stateDir: api.stateDir(),
          clock: { now: () => T, sleep: async (_ms: number, signal?: AbortSignal) => signal?.throwIfAborted() },
          remote: (h: { name: string }) => (h.name === 'server-1' ? founderRemote : agentHost({ hostMachine, journal })) as any,
        },
        ended.signal,
      )
      .catch((e) => e);
  };

  it('passes on a Node whose kubelet renewed its Lease', async () => {
    expect(await run(JSON.stringify({ holderIdentity: 'agent-1', leaseDurationSeconds: 40, renewTime: '2026-12-01T09:59:55.000000Z' }))).toBeUndefined();
  });

  it("a Node left from the host's previous life (stale Lease) is AGENT_NOT_REGISTERED, saying how old the heartbeat is", async () => {
    const err = await run(JSON.stringify({ holderIdentity: 'agent-1', leaseDurationSeconds: 40, renewTime: '2026-12-01T08:00:00.000000Z' }));
    expect(err.causeId).toBe('AGENT_NOT_REGISTERED');
    expect(err.evidence.seen).toBe(
      'its Node exists, but its Lease was last renewed 7200 s ago (2026-12-01T08:00:00.000000Z; it lasts 40 s): no kubelet of this name is running',
    );
  });

  const fresh = JSON.stringify({ holderIdentity: 'agent-1', leaseDurationSeconds: 40, renewTime: '2026-12-01T09:59:55.000000Z' });
  it("a host reinstalled a moment ago: the old kubelet's Lease is fresh, but the Node is another machine's, so it has not registered", async () => {
    const err = await run(fresh, { nodeMachine: 'old0machine', hostMachine: 'new1machine' });
    expect(err.causeId).toBe('AGENT_NOT_REGISTERED');
    expect(err.evidence.seen).toBe(
      "its Node was registered by another machine (machine-id old0machine; this host's is new1machine): the host was reinstalled and its kubelet has not registered",
    );
  });

  it('names the refusal its journal shows on the reinstalled host: NODE_PASSWORD_REJECTED', async () => {
    const journal =
      "Waiting to retrieve agent configuration; server is not ready: /var/lib/rancher/k3s/agent/serving-kubelet.crt: Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag\n";
    const err = await run(fresh, { nodeMachine: 'old0machine', hostMachine: 'new1machine', journal });
    expect(err.causeId).toBe('NODE_PASSWORD_REJECTED');
  });

  it('a Node without a machine-id (or a host that does not say) is judged by its Lease alone', async () => {
    expect(await run(fresh, { nodeMachine: '', hostMachine: 'new1machine' })).toBeUndefined();
  });
});
