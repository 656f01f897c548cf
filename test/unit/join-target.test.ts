// Where a server without a datastore joins: the founder on a cold build, else a live server of the cluster
// (never the founder by name: it may be down or removed).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fromText } from '../../src/inventory/load.ts';
import { serverRefs, topologyOf } from '../../src/inventory/hosts.ts';
import { chooseJoinTarget, joinTargetPreflight, serverState, type ServerState } from '../../phases/k3s/join-target.ts';
import { joinKeyFor } from '../../phases/k3s/join-mode.ts';
import { Facts } from '../../src/engine/facts.ts';
import type { ReadContext } from '../../src/engine/context.ts';

const inv = fromText(readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8'), '/x/inventory/prod.yaml', '/home/ops');
const servers = serverRefs(inv);
const [founder] = servers;
const state = (over: Partial<Record<string, { datastore?: boolean; ready?: boolean }>>): ServerState[] =>
  servers.map((s) => ({ name: s.name, address: s.address, datastore: false, ready: false, ...over[s.name] }));

describe('the join target of a server without a datastore', () => {
  it('is the founder on a cold build (no server holds a datastore)', () => {
    expect(chooseJoinTarget(state({}), founder, 6443)).toMatchObject({ name: 'k3s-prod-1', url: 'https://192.168.2.10:6443' });
  });

  it('is the first server in inventory order that holds a datastore and answers /readyz: never the founder by name', () => {
    const founderDown = state({
      'k3s-prod-1': { datastore: true, ready: false },
      'k3s-prod-2': { datastore: true, ready: false },
      'k3s-prod-3': { datastore: true, ready: true },
    });
    expect(chooseJoinTarget(founderDown, founder, 6443)).toMatchObject({ name: 'k3s-prod-3', url: 'https://192.168.2.12:6443' });
    // A removed founder: the first live holder, whoever the inventory now marks founder.
    const removed = state({ 'k3s-prod-2': { datastore: true, ready: true }, 'k3s-prod-3': { datastore: true, ready: true } });
    expect(chooseJoinTarget(removed, founder, 6443).name).toBe('k3s-prod-2');
  });

  it('never a server being replaced (it is wiped before it joins)', () => {
    const all = state({ 'k3s-prod-1': { datastore: true, ready: true }, 'k3s-prod-2': { datastore: true, ready: true } });
    expect(chooseJoinTarget(all, founder, 6443, 'k3s-prod-1').name).toBe('k3s-prod-2');
  });

  it('falls back to the first holder when no API answers (the gate names why the join cannot go on)', () => {
    expect(chooseJoinTarget(state({ 'k3s-prod-2': { datastore: true } }), founder, 6443).name).toBe('k3s-prod-2');
  });

  it('reads the probes: `present` for a datastore, `ok` from /readyz', () => {
    const r = (datastore: string, readyz?: { code: number; stdout: string; stderr?: string }) => ({
      datastore: { stdout: datastore, stderr: '', code: 0 },
      ...(readyz && { readyz: { stderr: '', ...readyz } }),
    });
    expect(serverState(founder, r('present\n', { code: 0, stdout: 'ok' }))).toMatchObject({ datastore: true, ready: true });
    // The API refuses (not ready yet: kubectl's words for its HTTP 500), or nothing answers there.
    expect(serverState(founder, r('present\n', { code: 1, stdout: '', stderr: 'Error from server (InternalError): an error on the server' }))).toMatchObject({
      datastore: true,
      ready: false,
    });
    expect(serverState(founder, r('present\n'))).toMatchObject({ datastore: true, ready: false });
    expect(serverState(founder, r('', { code: 0, stdout: 'ok' }))).toMatchObject({ datastore: false, ready: false });
  });

  it("is what a fresh joiner's config says; a server that holds a datastore keeps its join line", () => {
    const facts = new Facts();
    const ctx = { inventory: inv, topology: topologyOf(inv), facts } as unknown as ReadContext;
    const r = (datastore: string, ok = false) => ({
      datastore: { stdout: datastore, stderr: '', code: 0 },
      readyz: ok ? { stdout: 'ok', stderr: '', code: 0 } : { stdout: '', stderr: '', code: 1 },
    });
    const seen = new Map([
      [servers[0], r('present\n')],
      [servers[1], r('present\n', true)],
      [servers[2], r('')],
    ]);
    const verdict = joinTargetPreflight.check(seen, ctx);
    facts.setRun(verdict.facts);
    expect(verdict.stops).toEqual([]);
    const target = 'https://192.168.2.11:6443';
    expect(joinKeyFor({ target, host: servers[2], datastore: '', joinLine: '' })).toEqual({ server: target });
    expect(joinKeyFor({ target, host: servers[1], datastore: 'present', joinLine: 'server: https://192.168.2.10:6443' })).toEqual({
      server: 'https://192.168.2.10:6443',
    });
  });
});
