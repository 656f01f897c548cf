// The pure parts of the Flux controllers' pods in the twin (lab/twin/addons/flux/pods.ts): what a controller's
// binary does with its feature gates at start (the line and exit code upstream's main.go gives), how the
// Deployment controller replaces pods under Recreate and RollingUpdate, and the Deployment's status words.
import { describe, expect, it } from 'vitest';
import {
  controllerStart,
  deploymentStatus,
  featureGateArgs,
  fenceposts,
  placement,
  podFor,
  podName,
  podTemplateHash,
  podsOf,
  replicaSetName,
  rolloutPlan,
} from '../../lab/twin/addons/flux/pods.ts';

const AT = new Date('2026-01-01T00:00:01.000Z');
const deployment = (name: string, strategy?: object, args: string[] = []) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'flux-system', uid: 'd-uid', generation: 1 },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    ...(strategy ? { strategy } : {}),
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'manager', args }] } },
  },
});
const ready = (pod: any, ok: boolean) => ({ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: ok ? 'True' : 'False' }] } });

describe("a Flux controller's start", () => {
  it('a feature gate it does not support: the error line of its setup logger, exit 1 (SupportedFeatures, main.go)', () => {
    expect(controllerStart('source-controller', ['--log-encoding=json', '--feature-gates=CancelHealthCheckOnNewRevision=true'], AT)).toEqual({
      lines: [
        `{"level":"error","ts":"2026-01-01T00:00:01.000Z","logger":"setup","msg":"unable to load feature gates","error":"feature-gate 'CancelHealthCheckOnNewRevision' not supported"}`,
      ],
      exitCode: 1,
    });
  });

  it('gates it supports are loaded, one line each, and the manager starts', () => {
    expect(controllerStart('kustomize-controller', ['--feature-gates=CancelHealthCheckOnNewRevision=true,StrictPostBuildSubstitutions=false'], AT)).toEqual({
      lines: [
        '{"level":"info","ts":"2026-01-01T00:00:01.000Z","logger":"setup","msg":"loading feature gate","CancelHealthCheckOnNewRevision":true}',
        '{"level":"info","ts":"2026-01-01T00:00:01.000Z","logger":"setup","msg":"loading feature gate","StrictPostBuildSubstitutions":false}',
        '{"level":"info","ts":"2026-01-01T00:00:01.000Z","logger":"setup","msg":"starting manager"}',
      ],
    });
    expect(controllerStart('helm-controller', [], AT).exitCode).toBeUndefined();
  });

  it('reads the flag in both forms, every pair', () => {
    expect(featureGateArgs(['--feature-gates', 'A=true,B=false', '--x', '--feature-gates=C=true'])).toEqual([
      ['A', true],
      ['B', false],
      ['C', true],
    ]);
  });
});

describe("the Deployment controller for Flux's Deployments", () => {
  it('maxSurge and maxUnavailable of 25 % at one replica: one more pod, none unavailable; Recreate: neither', () => {
    expect(fenceposts(deployment('kustomize-controller'))).toEqual({ surge: 1, unavailable: 0 });
    expect(fenceposts(deployment('x', { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 0 } }))).toEqual({ surge: 0, unavailable: 1 });
    expect(fenceposts(deployment('source-controller', { type: 'Recreate' }))).toEqual({ surge: 0, unavailable: 0 });
  });

  it('pods are named after their ReplicaSet, the same on every server, and carry the template hash', () => {
    const d = deployment('source-controller', { type: 'Recreate' });
    const hash = podTemplateHash(d.spec.template);
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{10}$/);
    expect(podName(d, hash, 0)).toBe(podName(d, hash, 0));
    expect(podName(d, hash, 0)).toMatch(new RegExp(`^source-controller-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
    const pod = podFor(d, hash, 0, 'k3s-lab-1');
    expect(pod.metadata.labels).toEqual({ app: 'source-controller', 'pod-template-hash': hash });
    expect(pod.metadata.ownerReferences[0]).toMatchObject({ kind: 'ReplicaSet', name: replicaSetName(d, hash), controller: true });
    expect(podsOf(d, [pod, { ...pod, metadata: { ...pod.metadata, labels: { app: 'other' } } }])).toEqual([pod]);
  });

  it('Recreate: the old pod goes before the new one is made', () => {
    const before = deployment('source-controller', { type: 'Recreate' });
    const old = ready(podFor(before, podTemplateHash(before.spec.template), 0, 'n1'), true);
    const after = deployment('source-controller', { type: 'Recreate' }, ['--feature-gates=X=true']);
    const hash = podTemplateHash(after.spec.template);
    expect(rolloutPlan(after, [old], hash)).toEqual({ create: 0, remove: [old] });
    expect(rolloutPlan(after, [], hash)).toEqual({ create: 1, remove: [] });
  });

  it('RollingUpdate: a new pod beside the old; the old goes once the new is available; a new pod that never becomes Ready leaves the old serving', () => {
    const before = deployment('kustomize-controller');
    const old = ready(podFor(before, podTemplateHash(before.spec.template), 0, 'n1'), true);
    const after = deployment('kustomize-controller', undefined, ['--feature-gates=X=true']);
    const hash = podTemplateHash(after.spec.template);
    expect(rolloutPlan(after, [old], hash)).toEqual({ create: 1, remove: [] });
    const crashing = ready(podFor(after, hash, 0, 'n1'), false);
    expect(rolloutPlan(after, [old, crashing], hash)).toEqual({ create: 0, remove: [] });
    const fine = ready(podFor(after, hash, 0, 'n1'), true);
    expect(rolloutPlan(after, [old, fine], hash)).toEqual({ create: 0, remove: [old] });
    // The change undone: the old template is current again and the crashing pod, not available, goes.
    expect(rolloutPlan(before, [old, crashing], podTemplateHash(before.spec.template))).toEqual({ create: 0, remove: [crashing] });
  });

  it("the Deployment's status in kube-controller-manager's words", () => {
    const d = deployment('source-controller', { type: 'Recreate' });
    const hash = podTemplateHash(d.spec.template);
    const rs = replicaSetName(d, hash);
    const down = deploymentStatus(d, [ready(podFor(d, hash, 0, 'n1'), false)], hash, AT);
    expect(down).toMatchObject({ observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 0, availableReplicas: 0, unavailableReplicas: 1 });
    expect(down.conditions.map((c: any) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.'],
      ['Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rs}" is progressing.`],
    ]);
    const up = deploymentStatus({ ...d, status: down }, [ready(podFor(d, hash, 0, 'n1'), true)], hash, AT);
    expect(up).toMatchObject({ readyReplicas: 1, availableReplicas: 1, unavailableReplicas: 0 });
    expect(up.conditions.map((c: any) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'],
      ['Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rs}" has successfully progressed.`],
    ]);
    // No progress for progressDeadlineSeconds (600 s by default): timed out.
    const stuck = { ...d, status: down };
    const late = deploymentStatus(stuck, [ready(podFor(d, hash, 0, 'n1'), false)], hash, new Date(AT.getTime() + 601_000));
    expect(late.conditions[1]).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${rs}" has timed out progressing.` });
  });

  it('a new controller pod goes to the first Ready server by name that is not cordoned', () => {
    const server = (name: string, o: { ready?: boolean; unschedulable?: boolean } = {}) => ({
      metadata: { name, labels: { 'node-role.kubernetes.io/control-plane': 'true' } },
      spec: o.unschedulable ? { unschedulable: true } : {},
      status: { conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
    });
    const agent = { metadata: { name: 'a0', labels: {} }, spec: {}, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    expect(placement([server('s2'), server('s1'), agent])).toBe('s1');
    expect(placement([server('s1', { unschedulable: true }), server('s2', { ready: false }), server('s3'), agent])).toBe('s3');
    expect(placement([server('s1', { unschedulable: true }), agent])).toBeUndefined();
  });
});
