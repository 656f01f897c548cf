import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  NODE_STATUS_REPORT_MS,
  NOT_READY_MESSAGE,
  cniReady,
  desiredNode,
  etcdStatusCondition,
  nodeReportDue,
  voterConditionDue,
} from '../../lab/twin/server/node.ts';

describe('k3s twin Node object', () => {
  const cond = (n: any, type: string) => n.status.conditions.find((c: any) => c.type === type);

  it('a server without CNI is NotReady with the runtime message, and carries the three role labels', () => {
    const n = desiredNode({ name: 's1', ip: '10.0.0.1', server: true, etcdMember: 's1-abc', cniReady: false });
    expect(cond(n, 'Ready')).toMatchObject({ status: 'False', message: NOT_READY_MESSAGE });
    // EtcdIsVoter is the etcd leader's to set; the node's own status update keeps what the leader wrote.
    expect(cond(n, 'EtcdIsVoter')).toBeUndefined();
    const set = { ...n, status: { ...n.status, conditions: [...n.status.conditions, etcdStatusCondition('voter', '')] } };
    expect(cond(desiredNode({ name: 's1', ip: '10.0.0.1', server: true, etcdMember: 's1-abc', cniReady: false }, set), 'EtcdIsVoter')).toMatchObject({
      status: 'True',
      reason: 'MemberNotLearner',
    });
    expect(n.metadata.labels).toMatchObject({
      'node-role.kubernetes.io/etcd': 'true',
      'node-role.kubernetes.io/control-plane': 'true',
      'node-role.kubernetes.io/master': 'true',
    });
  });

  it("EtcdIsVoter in k3s's words (pkg/etcd/etcd.go setEtcdStatusCondition); an agent has no etcd condition nor role labels", () => {
    expect(etcdStatusCondition('learner', '')).toMatchObject({
      status: 'False',
      reason: 'MemberIsLearner',
      message: 'Node has not been promoted to voting member of the etcd cluster',
    });
    expect(etcdStatusCondition('voter', '')).toMatchObject({
      status: 'True',
      reason: 'MemberNotLearner',
      message: 'Node is a voting member of the etcd cluster',
    });
    expect(etcdStatusCondition('unhealthy', 'failed to check etcd member status: timeout')).toMatchObject({
      status: 'False',
      reason: 'Unhealthy',
      message: 'failed to check etcd member status: timeout',
    });
    expect(etcdStatusCondition('unjoined', '')).toMatchObject({ status: 'False', reason: 'NotAMember', message: 'Node is not a member of the etcd cluster' });
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

  it('is written again only when its status changed or its last report is 5 minutes old, as the kubelet does', () => {
    const facts = { name: 'a1', ip: '10.0.0.9', server: false, cniReady: true, machineID: 'm1', bootID: 'b1' };
    const reported = desiredNode(facts);
    const at = Date.parse(reported.status.conditions.find((c: any) => c.type === 'Ready').lastHeartbeatTime);
    // Stored as the store writes it (keys in another order, a resourceVersion added): the same report.
    const stored = JSON.parse(JSON.stringify({ ...reported, metadata: { resourceVersion: '42', ...reported.metadata } }));
    const again = (f: typeof facts, nowMs: number) => nodeReportDue(stored, desiredNode(f, stored), nowMs);
    expect(nodeReportDue(undefined, reported, at)).toBe(true);
    expect(again(facts, at + 10_000)).toBe(false);
    expect(again(facts, at + NODE_STATUS_REPORT_MS - 1_000)).toBe(false);
    expect(again(facts, at + NODE_STATUS_REPORT_MS)).toBe(true);
    expect(again({ ...facts, cniReady: false }, at + 10_000)).toBe(true);
    expect(again({ ...facts, machineID: 'm2' }, at + 10_000)).toBe(true);
  });

  it("EtcdIsVoter is written again only when it changes or its heartbeat is 5 minutes old (k3s's heartbeatInterval)", () => {
    const voter = etcdStatusCondition('voter', '');
    const node = { status: { conditions: [voter] } };
    const at = Date.parse(voter.lastHeartbeatTime);
    expect(voterConditionDue({ status: { conditions: [] } }, voter, at)).toBe(true);
    expect(voterConditionDue(node, etcdStatusCondition('voter', '', node), at + 15_000)).toBe(false);
    expect(voterConditionDue(node, etcdStatusCondition('voter', '', node), at + NODE_STATUS_REPORT_MS)).toBe(true);
    expect(voterConditionDue(node, etcdStatusCondition('unhealthy', 'failed to check etcd member status: timeout', node), at + 15_000)).toBe(true);
  });
});
