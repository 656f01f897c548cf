import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOT_READY_MESSAGE, cniReady, desiredNode } from '../../lab/twin/server/node.ts';

describe('k3s twin Node object', () => {
  const cond = (n: any, type: string) => n.status.conditions.find((c: any) => c.type === type);

  it('a server without CNI is NotReady with the runtime message, and carries the three role labels', () => {
    const n = desiredNode({ name: 's1', ip: '10.0.0.1', server: true, etcdMember: 's1-abc', etcdVoter: true, cniReady: false });
    expect(cond(n, 'Ready')).toMatchObject({ status: 'False', message: NOT_READY_MESSAGE });
    expect(cond(n, 'EtcdIsVoter')).toMatchObject({ status: 'True' });
    expect(n.metadata.labels).toMatchObject({ 'node-role.kubernetes.io/etcd': 'true', 'node-role.kubernetes.io/control-plane': 'true', 'node-role.kubernetes.io/master': 'true' });
  });

  it('a learner is not a voter (reason NotAMember); an agent has no etcd condition nor role labels', () => {
    expect(cond(desiredNode({ name: 's2', ip: 'x', server: true, etcdVoter: false, cniReady: false }), 'EtcdIsVoter')).toMatchObject({ status: 'False', reason: 'NotAMember' });
    const agent = desiredNode({ name: 'a1', ip: 'x', server: false, cniReady: true });
    expect(cond(agent, 'EtcdIsVoter')).toBeUndefined();
    expect(cond(agent, 'Ready')).toMatchObject({ status: 'True' });
    expect(agent.metadata.labels['node-role.kubernetes.io/control-plane']).toBeUndefined();
  });

  it('becomes Ready once a CNI config file appears (the hook for a CNI)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'twin-cni-'));
    const cni = join(dir, 'net.d');
    expect(cniReady([cni])).toBe(false);
    mkdirSync(cni);
    writeFileSync(join(cni, '05-cilium.conflist'), '{}');
    expect(cniReady([cni])).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps labels and annotations set by others', () => {
    const existing = { metadata: { name: 's1', labels: { custom: 'yes' }, annotations: { a: 'b' } }, status: {} };
    const n = desiredNode({ name: 's1', ip: 'x', server: true, cniReady: false }, existing);
    expect(n.metadata.labels.custom).toBe('yes');
    expect(n.metadata.annotations.a).toBe('b');
  });
});
