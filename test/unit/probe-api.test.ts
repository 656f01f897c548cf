// Probes that read the Kubernetes API (ProbeCommand.api, src/engine/probes.ts): a run that can reach the API
// through a host's connection asks there and starts no process on the host for them; what the API does not
// answer runs on the host after all; the answers are the run's like any probe's (kept in its memo).
import { describe, expect, it } from 'vitest';
import type { ApiGet } from '../../src/engine/context.ts';
import type { ProbeCommand } from '../../src/engine/phase.ts';
import { ProbeMemo } from '../../src/engine/probe-memo.ts';
import { runProbes } from '../../src/engine/probes.ts';
import { rawGetProbe } from '../../src/k3s/remote.ts';
import { fixture, hosts } from '../support/engine-fixture.ts';

const [H] = hosts('h1');

/** An API that answers `/served` (and refuses `/missing` as the API does), and gives no answer for anything else. */
function api() {
  const asked: string[] = [];
  const get: ApiGet = async (_host, read) => {
    const path = typeof read === 'string' ? read : read.gets.map((g) => g.path).join(',');
    asked.push(path);
    if (path === '/served') return { code: 0, stdout: '{"kind":"Thing"}', stderr: '' };
    if (path === '/missing') return { code: 1, stdout: '', stderr: 'Error from server (NotFound): things "x" not found' };
    return undefined;
  };
  return { asked, get };
}

/** A probe whose host command prints where it ran: the host's answer is told from the API's. */
const probe = (path: string): ProbeCommand => ({ command: `echo on-host ${path}`, api: path });

describe('probes that read the API', () => {
  it("are answered through the connection, the host runs only the others, and a refusal is the probe's answer", async () => {
    const f = fixture({ check: false, hosts: [H] });
    const a = api();
    f.ctx.apiGet = a.get;
    const r = await runProbes(H, f.ctx, [
      ['served', probe('/served')],
      ['missing', probe('/missing')],
      ['plain', { command: 'echo plain' }],
    ]);
    expect(r.served).toMatchObject({ code: 0, stdout: '{"kind":"Thing"}' });
    expect(r.missing).toMatchObject({ code: 1, stderr: 'Error from server (NotFound): things "x" not found' });
    expect(r.plain).toMatchObject({ code: 0, stdout: 'plain\n' });
    const ran = f.remotes
      .get('h1')!
      .execs.map((e) => e.stdin ?? e.command)
      .join('\n');
    expect(ran).toContain('echo plain');
    expect(ran).not.toContain('on-host');
    expect(a.asked.sort()).toEqual(['/missing', '/served']);
  });

  it('one the API gave no answer to (nothing listening, another CA) runs on the host', async () => {
    const f = fixture({ check: false, hosts: [H] });
    f.ctx.apiGet = api().get;
    const r = await runProbes(H, f.ctx, [
      ['served', probe('/served')],
      ['silent', probe('/silent')],
    ]);
    expect(r.served.stdout).toBe('{"kind":"Thing"}');
    expect(r.silent).toMatchObject({ code: 0, stdout: 'on-host /silent\n' });
  });

  it('without the way to the API (no kubeconfig yet) every probe runs on the host, as kubectl there', async () => {
    const f = fixture({ check: false, hosts: [H] });
    const r = await runProbes(H, f.ctx, [['served', probe('/served')]]);
    expect(r.served.stdout).toBe('on-host /served\n');
    expect(rawGetProbe('/apis/apps/v1/namespaces/kube-system/daemonsets/cilium')).toEqual({
      command: 'k3s kubectl get --raw /apis/apps/v1/namespaces/kube-system/daemonsets/cilium --request-timeout=5s',
      sudo: true,
      api: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium',
    });
  });

  it('a secret probe is asked on the host, whose batch keeps its output out of the run log', async () => {
    const f = fixture({ check: false, hosts: [H] });
    const a = api();
    f.ctx.apiGet = a.get;
    const r = await runProbes(H, f.ctx, [['token', { ...probe('/served'), secret: true }]]);
    expect(r.token.stdout).toBe('on-host /served\n');
    expect(a.asked).toEqual([]);
  });

  it('an answer through the API is kept in the run memo: asked again, it is not asked twice', async () => {
    const f = fixture({ check: false, hosts: [H] });
    const a = api();
    f.ctx.apiGet = a.get;
    f.ctx.probeMemo = new ProbeMemo();
    const first = await runProbes(H, f.ctx, [['served', probe('/served')]]);
    const again = await runProbes(H, f.ctx, [['same', probe('/served')]]);
    expect(again.same.stdout).toBe(first.served.stdout);
    expect(a.asked).toEqual(['/served']);
  });
});
