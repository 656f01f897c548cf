// verify's node-to-node check (phases/verify/checks.ts ciliumNodeHealth) over Cilium's PUBLISHED health
// report: a node proven once is not read again; a node without results yet, or a failure seen in one probe
// only, is looked at again (no sooner than the report can change) and never final; a failure seen again in a
// newer probe is final. A stand-in `k3s` on the PATH prints each host's report as the test sets it.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ciliumNodeHealth } from '../../phases/verify/checks.ts';
import type { Remote } from '../../src/transport/types.ts';
import { fromText } from '../../src/inventory/load.ts';
import { allHostRefs } from '../../src/inventory/hosts.ts';
import { inventoryContext } from '../support/engine-fixture.ts';
import { LocalRemote } from '../support/local-remote.ts';

const dir = mkdtempSync(join(tmpdir(), 'node-health-gate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// `k3s crictl exec --name cilium-agent --state running -q cilium-health status -o json`: the host's report file.
writeFileSync(join(dir, 'k3s'), `#!/bin/sh\n[ "$1 $2 $8" = 'crictl exec cilium-health' ] || exit 9\ncat "${dir}/report-$H"\n`);
chmodSync(join(dir, 'k3s'), 0o755);

// A server `a` and an agent `b`.
const valid = readFileSync(new URL('../fixtures/inventory/valid.yaml', import.meta.url), 'utf8');
const inventory = fromText(
  valid.replace(
    /servers:\n(  - .*\n)+agents:\n(  - .*\n)+/,
    'servers:\n  - { name: a, address: 192.168.2.10, founder: true }\nagents:\n  - { name: b, address: 192.168.2.40 }\n',
  ),
  'valid.yaml',
  '/home/ops',
);
const H = allHostRefs(inventory);
type Path = { latency?: number; status?: string; lastProbed?: string } | undefined;
/** Host `of`'s report: each other node with its http result (undefined: listed without one). */
function report(of: string, peers: Record<string, Path>): void {
  const nodes = Object.entries(peers).map(([name, http]) => ({
    name,
    host: { 'primary-address': { ip: `10.0.0.${name.charCodeAt(0)}`, ...(http && { http }) }, 'secondary-addresses': [] },
  }));
  writeFileSync(join(dir, `report-${of}`), JSON.stringify({ local: { name: of }, nodes, timestamp: '2026-12-07T19:00:00Z', probeInterval: '21.97s' }));
}
const refused = (at: string): Path => ({ status: 'Get "http://10.0.0.98:4240/hello": dial tcp 10.0.0.98:4240: connect: connection refused', lastProbed: at });

function setup() {
  // The operator's clock, at the reports' times.
  let now = Date.parse('2026-12-07T19:00:10Z');
  const reads: string[] = [];
  const remotes = new Map(
    H.map((h) => {
      const local = new LocalRemote(h.name);
      const remote: Remote = {
        host: h.name,
        close: () => local.close(),
        exec: (command, o) => {
          if (String(o?.stdin ?? '').includes('cilium-health')) reads.push(h.name);
          return local.exec(`H=${h.name}; PATH=${dir}:$PATH; export H PATH; ${command}`, o);
        },
      };
      return [h.name, remote] as const;
    }),
  );
  const ctx = {
    ...inventoryContext(inventory, { stateDir: dir, remote: (h) => remotes.get(h.name)! }),
    clock: { now: () => now, sleep: async () => undefined },
  };
  return { ctx, reads, later: (ms: number) => (now += ms) };
}

describe("verify's node-to-node check over Cilium's published report", () => {
  it('waits while a node has no result yet and names it; passes once it has one, reading a proven node no more', async () => {
    const { ctx, reads, later } = setup();
    report('a', { b: undefined });
    report('b', { a: { latency: 5, lastProbed: '2026-12-07T19:00:01Z' } });
    const first = await ciliumNodeHealth.look(H[0], ctx as never);
    expect(first.final).toBe(false);
    expect(first.stops.map((s) => [s.causeId, s.host, s.evidence.seen])).toEqual([
      ['CILIUM_HEALTH_NOT_REPORTED', 'a', 'Cilium on a has no result for b yet (its report of 2026-12-07T19:00:00Z, a probe round every 21.97s)'],
    ]);
    expect(first.rows).toEqual([
      { host: 'a', ok: false, detail: 'no result yet for b' },
      { host: 'b', ok: true, detail: 'reaches a' },
    ]);
    // Too soon for the report to have changed: nobody is read again.
    later(3_000);
    await ciliumNodeHealth.look(H[0], ctx as never);
    expect(reads.sort()).toEqual(['a', 'b']);
    report('a', { b: { latency: 7, lastProbed: '2026-12-07T19:00:20Z' } });
    later(15_000);
    const second = await ciliumNodeHealth.look(H[0], ctx as never);
    expect(second.stops).toEqual([]);
    expect(second.rows.map((r) => r.ok)).toEqual([true, true]);
    expect(reads.sort()).toEqual(['a', 'a', 'b']);
    // The check's next turn (another run's, or after the run changed something) proves it again.
    ciliumNodeHealth.begin!(ctx as never);
    await ciliumNodeHealth.look(H[0], ctx as never);
    expect(reads.sort()).toEqual(['a', 'a', 'a', 'b', 'b']);
  });

  it('a failure seen in one probe is waited for (it may be from before the cluster settled or the fix); failing again in a probe made since, it is final', async () => {
    const { ctx, later } = setup();
    report('a', { b: refused('2026-12-07T19:00:05Z') });
    report('b', { a: { latency: 5, lastProbed: '2026-12-07T19:00:01Z' } });
    const once = await ciliumNodeHealth.look(H[0], ctx as never);
    expect(once.final).toBe(false);
    expect(once.rows[0]).toEqual({ host: 'a', ok: false, detail: 'cannot reach b (waiting for the next probe)' });
    expect(once.stops[0].causeId).toBe('CILIUM_NODE_UNREACHABLE');
    // The same probe read again settles nothing, nor one made before the check first saw the failure.
    later(15_000);
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).final).toBe(false);
    report('a', { b: refused('2026-12-07T19:00:09Z') });
    later(15_000);
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).final).toBe(false);
    report('a', { b: refused('2026-12-07T19:00:27Z') });
    later(15_000);
    const twice = await ciliumNodeHealth.look(H[0], ctx as never);
    expect(twice.final).toBe(true);
    expect(twice.stops.map((s) => [s.causeId, s.host, s.message])).toEqual([
      ['CILIUM_NODE_UNREACHABLE', 'a', 'Cilium on a cannot reach b (10.0.0.98) on 4240/tcp'],
    ]);
    expect(twice.stops[0].evidence.seen).toBe(
      'a → b (10.0.0.98, host): Get "http://10.0.0.98:4240/hello": dial tcp 10.0.0.98:4240: connect: connection refused; open 4240/tcp between them (probed 2026-12-07T19:00:27Z)',
    );
    expect(twice.rows[0]).toEqual({ host: 'a', ok: false, detail: 'cannot reach b' });
  });

  it('a health API that does not answer for a minute is final (cilium-health off or down: the agents answered before)', async () => {
    const { ctx, later } = setup();
    rmSync(join(dir, 'report-a'), { force: true });
    report('b', { a: { latency: 5, lastProbed: '2026-12-07T19:00:01Z' } });
    const first = await ciliumNodeHealth.look(H[0], ctx as never);
    expect(first.stops.map((s) => s.causeId)).toEqual(['CILIUM_AGENTS_NOT_READY']);
    expect(first.final).toBe(false);
    later(30_000);
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).final).toBe(false);
    later(30_000);
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).final).toBe(true);
  });

  it('a failure that heals at its next probe passes', async () => {
    const { ctx, later } = setup();
    report('a', { b: refused('2026-12-07T19:00:05Z') });
    report('b', { a: { latency: 5, lastProbed: '2026-12-07T19:00:01Z' } });
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).stops).toHaveLength(1);
    report('a', { b: { latency: 9, lastProbed: '2026-12-07T19:00:27Z' } });
    later(15_000);
    expect((await ciliumNodeHealth.look(H[0], ctx as never)).stops).toEqual([]);
  });
});
