// The rollout gate's judgement: kubectl rollout status's verdict for the DaemonSet, and a pod is current
// when it carries the current ControllerRevision's hash — not when its pod-template-generation equals
// metadata.generation, which a new rollout width moves without a new pod template.
import { describe, expect, it } from 'vitest';
import { currentRevisionHash, daemonSetRollout, podIsCurrent } from '../../phases/cilium/rollout-judge.ts';

const ds = (o: { generation: number; observed: number; templateGeneration: number; updated?: number; available?: number; desired?: number }) => ({
  metadata: {
    name: 'cilium',
    uid: 'ds-uid',
    generation: o.generation,
    annotations: { 'deprecated.daemonset.template.generation': String(o.templateGeneration) },
  },
  spec: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } },
  status: { observedGeneration: o.observed, desiredNumberScheduled: o.desired ?? 4, updatedNumberScheduled: o.updated ?? 4, numberAvailable: o.available ?? 4 },
});
const rev = (hash: string, revision: number, uid = 'ds-uid') => ({
  metadata: { name: `cilium-${hash}`, labels: { 'controller-revision-hash': hash }, ownerReferences: [{ kind: 'DaemonSet', uid, controller: true }] },
  revision,
});
const pod = (hash: string, templateGeneration: number) => ({
  metadata: { labels: { 'controller-revision-hash': hash, 'pod-template-generation': String(templateGeneration) } },
});

describe('cilium rollout judgement', () => {
  it('a non-template change (the rollout width): generation 2, template generation 1, the same revision — rolled out, every pod current', () => {
    const d = ds({ generation: 2, observed: 2, templateGeneration: 1 });
    expect(daemonSetRollout(d)).toEqual({ done: true, message: 'daemon set "cilium" successfully rolled out' });
    expect(podIsCurrent(pod('aaa', 1), d, [rev('aaa', 1)])).toBe(true);
  });

  it('the controller has not observed the new generation yet: not rolled out, no pod judged current', () => {
    const d = ds({ generation: 3, observed: 2, templateGeneration: 2 });
    expect(daemonSetRollout(d)).toEqual({ done: false, message: 'Waiting for daemon set spec update to be observed...' });
    expect(currentRevisionHash(d, [rev('aaa', 1)])).toBeUndefined();
    expect(podIsCurrent(pod('aaa', 1), d, [rev('aaa', 1)])).toBe(false);
  });

  it("a new template: the new revision is current, the old pods are not, kubectl's waiting words", () => {
    const d = ds({ generation: 2, observed: 2, templateGeneration: 2, updated: 1, available: 3 });
    const revisions = [rev('aaa', 1), rev('bbb', 2), rev('zzz', 9, 'another-ds')];
    expect(currentRevisionHash(d, revisions)).toBe('bbb');
    expect(podIsCurrent(pod('aaa', 1), d, revisions)).toBe(false);
    expect(podIsCurrent(pod('bbb', 2), d, revisions)).toBe(true);
    expect(daemonSetRollout(d).message).toBe('Waiting for daemon set "cilium" rollout to finish: 1 out of 4 new pods have been updated...');
    expect(daemonSetRollout(ds({ generation: 2, observed: 2, templateGeneration: 2, available: 3 })).message).toBe(
      'Waiting for daemon set "cilium" rollout to finish: 3 of 4 updated pods are available...',
    );
  });

  it('a template changed and changed back: the old revision is current again and its pods are current, whatever their template generation', () => {
    const d = ds({ generation: 3, observed: 3, templateGeneration: 3 });
    const revisions = [rev('aaa', 3), rev('bbb', 2)];
    expect(podIsCurrent(pod('aaa', 1), d, revisions)).toBe(true);
    expect(podIsCurrent(pod('bbb', 2), d, revisions)).toBe(false);
  });

  it('no ControllerRevision readable: the pod-template-generation label against the template generation, never metadata.generation', () => {
    const d = ds({ generation: 5, observed: 5, templateGeneration: 2 });
    expect(podIsCurrent(pod('x', 2), d, [])).toBe(true);
    expect(podIsCurrent(pod('x', 1), d, [])).toBe(false);
  });

  it('an OnDelete DaemonSet never reads as rolled out', () => {
    const d = { ...ds({ generation: 1, observed: 1, templateGeneration: 1 }), spec: { updateStrategy: { type: 'OnDelete' } } };
    expect(daemonSetRollout(d).done).toBe(false);
  });
});
