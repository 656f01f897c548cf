// The k3s twin's server-side printing for `kubectl get pods` (kubernetes pkg/printers/internalversion/printers.go).
import { describe, expect, it } from 'vitest';
import { podRow, toTable } from '../../lab/twin/api/table.ts';

const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
const pod = (status: any, extra: any = {}) => ({
  metadata: { name: 'cilium-b4xkq', creationTimestamp: ago(300), ...(extra.metadata ?? {}) },
  spec: { nodeName: 'k3s-lab-agent-1', containers: [{ name: 'cilium-agent' }], ...(extra.spec ?? {}) },
  status,
});

describe('pod table', () => {
  it('has the columns kube-apiserver prints, the wide ones at priority 1', () => {
    const t = toTable('Pod', [], '1', 'None');
    expect(t.columnDefinitions.map((c: any) => [c.name, c.priority])).toEqual([
      ['Name', 0],
      ['Ready', 0],
      ['Status', 0],
      ['Restarts', 0],
      ['Age', 0],
      ['IP', 1],
      ['Node', 1],
      ['Nominated Node', 1],
      ['Readiness Gates', 1],
    ]);
  });

  it('a running, ready pod', () => {
    const row = podRow(
      pod({
        phase: 'Running',
        podIP: '10.77.0.13',
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [{ name: 'cilium-agent', ready: true, restartCount: 0, state: { running: {} } }],
      }),
    );
    expect(row).toEqual(['cilium-b4xkq', '1/1', 'Running', '0', '5m', '10.77.0.13', 'k3s-lab-agent-1', '<none>', '<none>']);
  });

  it("a crash-looping container names its reason and the restarts with the last one's age", () => {
    const row = podRow(
      pod({
        phase: 'Running',
        containerStatuses: [
          {
            name: 'cilium-agent',
            ready: false,
            restartCount: 3,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { finishedAt: ago(90), exitCode: 1 } },
          },
        ],
      }),
    );
    expect(row.slice(1, 4)).toEqual(['0/1', 'CrashLoopBackOff', '3 (90s ago)']);
  });

  it('a pod not yet started by a kubelet: Pending, no IP', () => {
    expect(podRow(pod({ phase: 'Pending' })).slice(1, 6)).toEqual(['0/1', 'Pending', '0', '5m', '<none>']);
  });

  it('a pod being deleted is Terminating', () => {
    expect(podRow(pod({ phase: 'Running' }, { metadata: { deletionTimestamp: ago(1) } }))[2]).toBe('Terminating');
  });
});
