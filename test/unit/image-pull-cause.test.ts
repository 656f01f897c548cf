// IMAGE_NOT_AVAILABLE from the pods the gates read: which image, which node, what to add to the artifacts;
// decided at once on an air-gapped site only.
import { describe, expect, it } from 'vitest';
import { imagePullCause, pullFailures } from '../../src/images/pull-cause.ts';

const IMAGE = `quay.io/cilium/cilium:v1.19.5@sha256:${'2'.repeat(64)}`;
const pod = (waiting: any, init = false) => ({
  metadata: { name: 'cilium-abcde', namespace: 'kube-system' },
  spec: { nodeName: 'k3s-lab-2', initContainers: [{ name: 'config', image: IMAGE }], containers: [{ name: 'cilium-agent', image: IMAGE }] },
  status: init
    ? {
        initContainerStatuses: [{ name: 'config', image: IMAGE, state: { waiting } }],
        containerStatuses: [{ name: 'cilium-agent', state: { waiting: { reason: 'PodInitializing' } } }],
      }
    : { containerStatuses: [{ name: 'cilium-agent', image: IMAGE, state: { waiting } }] },
});

describe('image pull failures', () => {
  it('names image, node and the OCI archive to add for a digest-pinned image (init containers too)', () => {
    const backoff = { reason: 'ImagePullBackOff', message: `Back-off pulling image "${IMAGE}"` };
    for (const p of [pod(backoff), pod(backoff, true)]) {
      const r = imagePullCause([p], true)!;
      expect(r.decided).toBe(true);
      expect(r.cause.causeId).toBe('IMAGE_NOT_AVAILABLE');
      expect(r.cause.host).toBe('k3s-lab-2');
      expect(r.cause.message).toBe(
        `${IMAGE} is not on k3s-lab-2 and cannot be pulled: add an OCI archive holding it (the reference pins a digest; a docker save archive keeps tags only) to k3s.imageArchives`,
      );
      expect(r.cause.evidence.seen).toMatch(
        /^pod kube-system\/cilium-abcde on k3s-lab-2: container (config|cilium-agent) waiting ImagePullBackOff: Back-off pulling image "/,
      );
    }
  });

  it('not decided either on a node this run has just put archives on: the kubelet finds the image when its back-off ends', () => {
    const backoff = { reason: 'ImagePullBackOff', message: `Back-off pulling image "${IMAGE}"` };
    expect(imagePullCause([pod(backoff)], true, (n) => n === 'k3s-lab-2')?.decided).toBe(false);
    expect(imagePullCause([pod(backoff)], true, (n) => n === 'k3s-lab-3')?.decided).toBe(true);
  });

  it('with registries it is not decided before the budget ends; other waiting reasons are no pull failure', () => {
    expect(imagePullCause([pod({ reason: 'ErrImagePull', message: 'failed to pull and unpack image' })], false)?.decided).toBe(false);
    expect(pullFailures([pod({ reason: 'ContainerCreating' }), pod({ reason: 'CrashLoopBackOff' })])).toEqual([]);
    expect(imagePullCause([], true)).toBeUndefined();
  });
});
