// The rolling change's preflight across the servers (phases/k3s/rolling-preflight.ts): what it refuses before
// any server is touched, and what it learns for the hosts' order and plans.
import { describe, expect, it } from 'vitest';
import { Facts } from '../../src/engine/facts.ts';
import type { ReadContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { checkServers } from '../../phases/k3s/rolling-preflight.ts';
import { cordonedByRun, rollingView, targetBinary } from '../../phases/k3s/rolling-facts.ts';
import { stateTokenSha } from '../../phases/k3s-founder.ts';
import { topologyFor } from '../support/engine-fixture.ts';
import { CORDONED_BY } from '../../src/k3s/drain.ts';

const servers: HostRef[] = ['s1', 's2', 's3'].map((name, i) => ({ name, address: `10.0.0.${10 + i}`, role: 'server', founder: i === 0 }));
const OLD = 'a'.repeat(64);
const NEW = 'b'.repeat(64);
const TOKEN = 'c'.repeat(64);
const answer = (stdout: string, code = 0) => ({ stdout, stderr: '', code });

function seenOf(
  each: Partial<{ active: string; datastore: string; binary: string; token: string; lease: string; nodes: string }>[],
): Map<HostRef, ProbeResults> {
  return new Map(
    servers.map((h, i) => {
      const e = {
        active: 'active',
        datastore: 'present',
        binary: `${OLD}\nk3s version v1.33.5+k3s1 (8e8f2a47)\n"etcd-version":"3.5.21"`,
        token: TOKEN,
        lease: '',
        nodes: '',
        ...each[i],
      };
      return [
        h,
        {
          active: answer(e.active),
          datastore: answer(e.datastore),
          binary: answer(e.binary),
          tokenSecret: answer(e.token),
          lease: answer(e.lease),
          nodes: answer(e.nodes),
        },
      ];
    }),
  );
}

function check(seen: Map<HostRef, ProbeResults>, target = { version: 'v1.33.7+k3s3', etcd: '3.5.26', sha256: NEW }, stateSha: string | null = TOKEN) {
  const facts = new Facts();
  facts.setRun([targetBinary(target), stateTokenSha(stateSha)]);
  const ctx = { facts, topology: topologyFor(servers) } as unknown as ReadContext;
  const verdict = checkServers(seen, ctx);
  const run = new Facts();
  run.setRun(verdict.facts);
  return { ids: verdict.stops.map((s) => s.causeId), stops: verdict.stops, view: run.run(rollingView), cordoned: run.run(cordonedByRun) };
}

describe('the rolling change preflight', () => {
  it('learns the VIP holder and the nodes a stopped rolling change left cordoned', () => {
    const node = (name: string, cordoned?: string) => ({ metadata: { name, ...(cordoned && { annotations: { [CORDONED_BY]: cordoned } }) } });
    const nodes = JSON.stringify({ kind: 'NodeList', items: [node('s1'), node('s2', 'rolling change'), node('s3'), node('k3s-agent-1', 'rolling change')] });
    const r = check(seenOf([{ lease: JSON.stringify({ kind: 'Lease', spec: { holderIdentity: 's2' } }), nodes }]));
    expect(r.ids).toEqual([]);
    expect(r.view).toEqual({ running: true, members: ['s1', 's2', 's3'], holder: 's2' });
    expect(r.cordoned).toEqual(['s2', 'k3s-agent-1']);
  });

  it('refuses a path k3s does not support, naming what each server runs', () => {
    const r = check(seenOf([{}, {}, {}]), { version: 'v1.34.1+k3s1', etcd: '3.6.4', sha256: NEW });
    expect(r.ids).toEqual(['ETCD_WAYPOINT_REQUIRED']);
    expect(r.stops[0].host).toBe('s1, s2, s3');
  });

  it('refuses with a server whose k3s is down while its datastore is there (QUORUM_AT_RISK), when a binary moves', () => {
    const r = check(seenOf([{}, {}, { active: 'inactive' }]));
    expect(r.ids).toEqual(['QUORUM_AT_RISK']);
    expect(r.stops[0].host).toBe('s3');
  });

  it('refuses a state folder whose token is not the running founder’s, before any restart (STATE_TOKEN_MISMATCH)', () => {
    expect(check(seenOf([{}, {}, {}]), undefined, null).ids).toEqual(['STATE_TOKEN_MISMATCH']);
    expect(check(seenOf([{}, {}, {}]), undefined, 'd'.repeat(64)).ids).toEqual(['STATE_TOKEN_MISMATCH']);
  });

  it('has nothing to judge on a converged cluster or a cold build', () => {
    const converged = seenOf(servers.map(() => ({ binary: NEW })));
    expect(check(converged).ids).toEqual([]);
    const cold = check(seenOf(servers.map(() => ({ active: 'inactive', datastore: '', binary: '', token: '' }))));
    expect(cold.ids).toEqual([]);
    expect(cold.view).toMatchObject({ running: false });
  });
});
