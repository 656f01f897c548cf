// verify's live look at the Cilium agents (phases/verify/checks.ts ciliumAgentsLive) execs into every node's
// agent container, at most the inventory's `parallelism` at once: each exec starts crictl and has the agent
// probe every node, and 30 hosts asked together kept the 2-core lab busy past the look's budget.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromText } from '../../src/inventory/load.ts';
import { allHostRefs } from '../../src/inventory/hosts.ts';
import { ciliumAgentsLive } from '../../phases/verify/checks.ts';
import type { Remote } from '../../src/transport/types.ts';
import { fixture } from '../support/engine-fixture.ts';

const valid = readFileSync(new URL('../fixtures/inventory/valid.yaml', import.meta.url), 'utf8');
const agents = Array.from({ length: 9 }, (_, i) => `  - { name: worker-${i + 2}, address: 192.168.2.${41 + i} }`).join('\n');

describe("verify's live look at the Cilium agents", () => {
  it('asks at most `parallelism` agents at once, every one of them in the end', async () => {
    const text = valid.replace('agents:\n  - { name: worker-1, address: 192.168.2.40 }', `agents:\n  - { name: worker-1, address: 192.168.2.40 }\n${agents}`);
    const inventory = fromText(`${text}\nparallelism: 3\n`, 'valid.yaml', '/home/ops');
    const hosts = allHostRefs(inventory);
    expect(hosts).toHaveLength(13);
    const f = fixture({ check: false, hosts });
    let inFlight = 0;
    let most = 0;
    const asked: string[] = [];
    const remote = (name: string): Remote => ({
      host: name,
      close: async () => {},
      exec: async (command, o) => {
        if (!String(o?.stdin ?? '').includes('crictl')) return { command, stdout: '', stderr: 'not asked here', code: 1, durationMs: 1 };
        asked.push(name);
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 30));
        inFlight--;
        return { command, stdout: '', stderr: '', code: 0, durationMs: 30 };
      },
    });
    const remotes = new Map(hosts.map((h) => [h.name, remote(h.name)]));
    const ctx = { ...f.ctx, inventory, remote: (h: { name: string }) => remotes.get(h.name)! };
    const verdict = await ciliumAgentsLive.look(hosts[0], ctx);
    // This fixture's hosts forward no port, so the pods are not read and the look says so; the execs it
    // started before reading them go on, bounded.
    expect(verdict.stops.map((s) => s.causeId)).toEqual(['API_UNREACHABLE_VIA']);
    await new Promise((r) => setTimeout(r, 400));
    expect(asked.sort()).toEqual(hosts.map((h) => h.name).sort());
    expect(most).toBe(3);
  });
});
