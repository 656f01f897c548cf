// The HelmChart step notes the release's revisions before it writes; the rollout gate waits for a newer
// revision deployed before it judges the DaemonSet (phases/cilium/release-wait.ts), and goes by a
// container's failure only when it saw it happen (phases/cilium/pod-containers.ts).
import { describe, expect, it } from 'vitest';
import { ciliumInstall, installState, installed, notingRelease, parseRevisions, revisionsQuery } from '../../phases/cilium/release-wait.ts';
import { backedOffContainers, isStaleFailure } from '../../phases/cilium/pod-containers.ts';
import type { Step } from '../../src/engine/phase.ts';
import { Facts } from '../../src/engine/facts.ts';
import { ciliumRelease, type CiliumRelease } from '../../src/gitops/cilium-release.ts';

const release = { name: 'cilium', namespace: 'kube-system' };

describe('the install of the HelmChart this run wrote', () => {
  it("reads the release Secrets by their labels only (their data holds the chart's generated keys)", () => {
    const q = revisionsQuery(release);
    expect(q).toBe(
      `get secrets -n kube-system -l owner=helm,name=cilium -o jsonpath='{range .items[*]}{.metadata.labels.version} {.metadata.labels.status}{"\\n"}{end}'`,
    );
    expect(q).not.toMatch(/\.data|-o (json|yaml)\b/);
    expect(parseRevisions('1 superseded\n2 superseded\n3 deployed\n\n')).toEqual([
      { version: 1, status: 'superseded' },
      { version: 2, status: 'superseded' },
      { version: 3, status: 'deployed' },
    ]);
  });

  it('is done once a revision above the one seen before the write is deployed, not before', () => {
    const p = { release, before: 3 };
    expect(installed(p, parseRevisions('2 superseded\n3 deployed'))).toBe(false);
    expect(installed(p, parseRevisions('3 deployed\n4 failed'))).toBe(false);
    expect(installed(p, parseRevisions('3 superseded\n4 deployed'))).toBe(true);
    expect(installed(p, parseRevisions('4 superseded\n5 deployed'))).toBe(true);
    expect(installed({ release, before: 0 }, [])).toBe(false);
    expect(installed({ release, before: 0 }, parseRevisions('1 deployed'))).toBe(true);
  });

  it('says where the install is when the budget ends', () => {
    expect(installState({ release, before: 3 }, parseRevisions('3 deployed\n4 failed'))).toBe(
      'the HelmChart this run wrote is not installed: Helm release kube-system/cilium has deployed revision 3; newer: 4 failed',
    );
    expect(installState({ release, before: 0 }, [])).toBe(
      'the HelmChart this run wrote is not installed: Helm release kube-system/cilium has no deployed revision; no newer revision',
    );
  });

  it('the step notes the revision before it only when it writes the HelmChart', () => {
    const write: Step = { id: 'helmchart', title: 't', plan: () => ({ changes: [{ summary: 'update cilium.yaml' } as any] }) };
    const same: Step = { ...write, plan: () => ({ changes: [] }) };
    const facts = new Facts();
    facts.setRun([ciliumRelease({ release } as CiliumRelease)]);
    const ctx: any = { facts };
    const probe = { helmReleaseRevisions: { code: 0, stdout: '2 superseded\n3 deployed\n', stderr: '' } };
    expect(notingRelease(write).probe!({} as any, ctx).helmReleaseRevisions!.command).toBe(`k3s kubectl ${revisionsQuery(release)}`);
    expect(notingRelease(write).plan({ host: {} as any, probe, local: undefined, ctx }).facts).toEqual([ciliumInstall({ release, before: 3 })]);
    expect(notingRelease(same).plan({ host: {} as any, probe, local: undefined, ctx }).facts).toBeUndefined();
    // No release yet (a cold build) or an API that did not answer: any deployed revision will do.
    expect(
      notingRelease(write).plan({ host: {} as any, probe: { helmReleaseRevisions: { code: 1, stdout: '', stderr: 'x' } }, local: undefined, ctx }).facts,
    ).toEqual([ciliumInstall({ release, before: 0 })]);
  });
});

describe("a container's failure the gate did not see happen", () => {
  const pod = (restartCount: number, state: any) => ({
    metadata: { uid: 'u1' },
    status: {
      initContainerStatuses: [{ name: 'config', restartCount, state, lastState: { terminated: { exitCode: 1 } } }],
      containerStatuses: [{ name: 'cilium-agent', restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
    },
  });
  const backOff = { waiting: { reason: 'CrashLoopBackOff' } };

  it('a container already in back-off at the first look: its log is of a run before this one until it runs again', () => {
    const first = backedOffContainers([pod(1, backOff)]);
    expect([...first]).toEqual([['u1/config', 1]]);
    expect(isStaleFailure(first, pod(1, backOff), 'config')).toBe(true);
    expect(isStaleFailure(first, pod(1, { running: {} }), 'config')).toBe(false);
    expect(isStaleFailure(first, pod(2, backOff), 'config')).toBe(false);
    expect(isStaleFailure(first, pod(1, backOff), 'cilium-agent')).toBe(false);
  });

  it('a container that was running (or not yet there) at the first look: its failure counts', () => {
    const first = backedOffContainers([pod(0, { running: {} })]);
    expect(first.size).toBe(0);
    expect(isStaleFailure(first, pod(1, backOff), 'config')).toBe(false);
    expect(isStaleFailure(backedOffContainers([]), pod(1, backOff), 'config')).toBe(false);
  });
});
