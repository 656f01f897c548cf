// Draining a node (src/k3s/drain.ts) against a fake API and a fake clock: which pods are evicted, the 5 s
// retry of a refused eviction, the budget, the named stop (the pod and the PodDisruptionBudget that held it),
// and the node uncordoned again only when the drain cordoned it.
import { describe, expect, it } from 'vitest';
import { blockingBudget, CORDONED_BY, drainNode, uncordon, type DrainApi, type EvictOutcome, type PodRef, type PodSeen } from '../../src/k3s/drain.ts';
import { CauseError } from '../../src/errors.ts';

function fakeClock() {
  const c = { t: 0 };
  const clock = {
    now: () => c.t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      c.t += ms;
    },
  };
  return { c, clock };
}

const pod = (name: string, extra: Partial<PodSeen> = {}): PodSeen => ({
  namespace: 'shop',
  name,
  uid: `uid-${name}`,
  phase: 'Running',
  mirror: false,
  ...extra,
});

/** The 429 the API answers when a PodDisruptionBudget allows no disruption (pkg/registry/core/pod/storage/eviction.go). */
const pdb429 = (budget: string): EvictOutcome => ({
  ok: false,
  status: 429,
  message: "Cannot evict pod as it would violate the pod's disruption budget.",
  causes: [{ type: 'DisruptionBudget', message: `The disruption budget ${budget} needs 2 healthy pods and has 2 currently` }],
});

interface FakeOpts {
  pods: PodSeen[];
  unschedulable?: boolean;
  cordonedBy?: string;
  /** The answer to an eviction of `name` at time t (default: accepted). */
  evict?: (name: string, t: number) => EvictOutcome;
  /** When an evicted pod is gone: ms after its eviction (default 0: at the next look). */
  goneAfterMs?: (name: string) => number;
}

function fakeApi(c: { t: number }, o: FakeOpts) {
  const node = { unschedulable: o.unschedulable ?? false, cordonedBy: o.cordonedBy };
  const calls: string[] = [];
  const evictedAt = new Map<string, number>();
  const api: DrainApi = {
    readNode: async () => ({ unschedulable: node.unschedulable, ...(node.cordonedBy !== undefined && { cordonedBy: node.cordonedBy }) }),
    setUnschedulable: async (_n, on, mark) => {
      calls.push(`unschedulable=${on} mark=${mark}`);
      node.unschedulable = on;
      node.cordonedBy = mark ?? undefined;
    },
    podsOn: async () => o.pods,
    evict: async (p: PodRef) => {
      calls.push(`evict ${p.name} @${c.t}`);
      const r = o.evict?.(p.name, c.t) ?? { ok: true };
      if (r.ok) evictedAt.set(p.name, c.t);
      return r;
    },
    podGone: async (p: PodRef) => c.t - evictedAt.get(p.name)! >= (o.goneAfterMs?.(p.name) ?? 0),
  };
  return { api, node, calls };
}

async function caught(p: Promise<unknown>): Promise<CauseError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof CauseError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

const signal = new AbortController().signal;

describe('drainNode', () => {
  it('cordons, evicts only the pods a drain moves, and waits until they are gone', async () => {
    const { c, clock } = fakeClock();
    const pods = [
      pod('web-1', { controllerKind: 'ReplicaSet' }),
      pod('cilium-x', { namespace: 'kube-system', controllerKind: 'DaemonSet' }),
      pod('kube-vip-k3s-prod-2', { namespace: 'kube-system', mirror: true }),
      pod('job-done', { phase: 'Succeeded' }),
      pod('job-failed', { phase: 'Failed' }),
      pod('bare'),
    ];
    const { api, node, calls } = fakeApi(c, { pods, goneAfterMs: (n) => (n === 'web-1' ? 3_000 : 0) });
    const lines: string[] = [];
    const r = await drainNode(api, 'k3s-prod-2', { budgetMs: 60_000, clock, signal, mark: 'run-1', progress: (l) => lines.push(l) });
    expect(r.evicted.sort()).toEqual(['shop/bare', 'shop/web-1']);
    expect(r.left.sort()).toEqual(['kube-system/cilium-x', 'kube-system/kube-vip-k3s-prod-2', 'shop/job-done', 'shop/job-failed']);
    expect(r.cordonedHere).toBe(true);
    expect(calls.filter((x) => x.startsWith('evict'))).toEqual(['evict web-1 @0', 'evict bare @0']);
    expect(calls[0]).toBe('unschedulable=true mark=run-1');
    // It waited for web-1 (gone 3 s after its eviction), looking every second, and left the node cordoned.
    expect(c.t).toBe(3_000);
    expect(node).toEqual({ unschedulable: true, cordonedBy: 'run-1' });
    expect(lines).toEqual(['evicting pod shop/web-1', 'evicting pod shop/bare']);
  });

  it('retries a refused eviction every 5 s, and goes on once the budget lets the pod go', async () => {
    const { c, clock } = fakeClock();
    const { api, calls } = fakeApi(c, { pods: [pod('web-1')], evict: (_n, t) => (t < 12_000 ? pdb429('web') : { ok: true }) });
    const lines: string[] = [];
    const r = await drainNode(api, 'k3s-prod-2', { budgetMs: 60_000, clock, signal, progress: (l) => lines.push(l) });
    expect(r.evicted).toEqual(['shop/web-1']);
    expect(calls.filter((x) => x.startsWith('evict'))).toEqual(['evict web-1 @0', 'evict web-1 @5000', 'evict web-1 @10000', 'evict web-1 @15000']);
    expect(lines.filter((l) => l.startsWith('error when evicting'))).toEqual(
      Array(3).fill(
        `error when evicting pods/"web-1" -n "shop" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently`,
      ),
    );
  });

  it('stops with DRAIN_BLOCKED naming the pod and the PodDisruptionBudget at the end of its budget, the node uncordoned', async () => {
    const { c, clock } = fakeClock();
    const { api, node, calls } = fakeApi(c, { pods: [pod('web-1'), pod('db-0')], evict: (n) => (n === 'web-1' ? pdb429('web') : { ok: true }) });
    const lines: string[] = [];
    const err = await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 12_000, clock, signal, progress: (l) => lines.push(l) }));
    expect(err.causeId).toBe('DRAIN_BLOCKED');
    expect(err.host).toBe('k3s-prod-2');
    expect(err.message).toContain('shop/web-1');
    expect(err.message).toContain('PodDisruptionBudget shop/web');
    expect(err.evidence.command).toBe('kubectl -n shop get pdb web -o wide');
    expect(err.evidence.seen).toContain("HTTP 429 Cannot evict pod as it would violate the pod's disruption budget.");
    expect(err.evidence.seen).toContain('The disruption budget web needs 2 healthy pods and has 2 currently');
    // Three tries (0, 5, 10 s), a retry line for the two that were followed by another, the stop at 12 s.
    expect(calls.filter((x) => x.startsWith('evict web-1'))).toEqual(['evict web-1 @0', 'evict web-1 @5000', 'evict web-1 @10000']);
    expect(lines.filter((l) => l.includes('will retry after 5s'))).toHaveLength(2);
    expect(c.t).toBe(12_000);
    expect(calls.at(-1)).toBe('unschedulable=false mark=null');
    expect(node).toEqual({ unschedulable: false, cordonedBy: undefined });
  });

  it('leaves a node cordoned before the drain cordoned, unmarked, when it stops', async () => {
    const { c, clock } = fakeClock();
    const { api, node, calls } = fakeApi(c, { pods: [pod('web-1')], unschedulable: true, evict: () => pdb429('web') });
    const err = await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 7_000, clock, signal }));
    expect(err.causeId).toBe('DRAIN_BLOCKED');
    expect(calls.filter((x) => x.startsWith('unschedulable'))).toEqual([]);
    expect(node).toEqual({ unschedulable: true, cordonedBy: undefined });
  });

  it('takes back a node an earlier run of the tool cordoned (it carries the mark), and uncordons it on a stop', async () => {
    const { c, clock } = fakeClock();
    const { api, node } = fakeApi(c, { pods: [pod('web-1')], unschedulable: true, cordonedBy: 'run-0', evict: () => pdb429('web') });
    await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 7_000, clock, signal, mark: 'run-1' }));
    expect(node).toEqual({ unschedulable: false, cordonedBy: undefined });
  });

  it('stops with DRAIN_TIMEOUT naming the evicted pods still there, the node uncordoned', async () => {
    const { c, clock } = fakeClock();
    const { api, node } = fakeApi(c, { pods: [pod('web-1'), pod('db-0')], goneAfterMs: (n) => (n === 'db-0' ? 120_000 : 0) });
    const err = await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 30_000, clock, signal }));
    expect(err.causeId).toBe('DRAIN_TIMEOUT');
    expect(err.message).toContain('shop/db-0');
    expect(err.message).not.toContain('web-1');
    expect(c.t).toBe(30_000);
    expect(node.unschedulable).toBe(false);
  });

  it('never looks past its budget, whatever the pauses', async () => {
    const { c, clock } = fakeClock();
    const { api } = fakeApi(c, { pods: [pod('web-1')], evict: () => pdb429('web') });
    await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 2_500, clock, signal, retryEveryMs: 5_000 }));
    expect(c.t).toBe(2_500);
  });

  it('stops at once on an eviction no retry can help, with its status, and uncordons', async () => {
    const { c, clock } = fakeClock();
    const refused: EvictOutcome = { ok: false, status: 500, message: 'etcdserver: request timed out', causes: [] };
    const { api, node } = fakeApi(c, { pods: [pod('web-1')], evict: () => refused });
    const err = await caught(drainNode(api, 'k3s-prod-2', { budgetMs: 60_000, clock, signal }));
    expect(err.causeId).toBe('KUBE_API_FAILED');
    expect(err.message).toContain('HTTP 500 etcdserver: request timed out');
    expect(c.t).toBe(0);
    expect(node.unschedulable).toBe(false);
  });

  it('counts a pod already gone (404) as nothing to evict', async () => {
    const { c, clock } = fakeClock();
    const { api } = fakeApi(c, { pods: [pod('web-1')], evict: () => ({ ok: false, status: 404, message: 'pods "web-1" not found', causes: [] }) });
    const r = await drainNode(api, 'k3s-prod-2', { budgetMs: 60_000, clock, signal });
    expect(r.evicted).toEqual([]);
  });

  it('uncordons the node again when Ctrl-C ends a wait', async () => {
    const { c, clock } = fakeClock();
    const ac = new AbortController();
    const { api, node } = fakeApi(c, { pods: [pod('web-1')], evict: () => (ac.abort(new Error('Ctrl-C')), pdb429('web')) });
    await expect(drainNode(api, 'k3s-prod-2', { budgetMs: 60_000, clock, signal: ac.signal })).rejects.toThrow('Ctrl-C');
    expect(node.unschedulable).toBe(false);
  });
});

describe('uncordon', () => {
  it('uncordons only a node this tool cordoned', async () => {
    const { c } = fakeClock();
    const ours = fakeApi(c, { pods: [], unschedulable: true, cordonedBy: 'run-1' });
    expect(await uncordon(ours.api, 'k3s-prod-2')).toBe(true);
    expect(ours.node).toEqual({ unschedulable: false, cordonedBy: undefined });
    const theirs = fakeApi(c, { pods: [], unschedulable: true });
    expect(await uncordon(theirs.api, 'k3s-prod-2')).toBe(false);
    expect(theirs.node.unschedulable).toBe(true);
    expect(theirs.calls).toEqual([]);
  });

  it('names the annotation it goes by', () => {
    expect(CORDONED_BY).toBe('bootstrap.k3s.io/cordoned');
  });
});

describe('blockingBudget', () => {
  it('reads the budget from each wording the API gives a DisruptionBudget cause', () => {
    for (const message of [
      'The disruption budget web needs 2 healthy pods and has 2 currently',
      'The disruption budget web is still being processed by the server.',
      'The disruption budget web does not allow evicting pods currently',
    ])
      expect(blockingBudget([{ type: 'DisruptionBudget', message }])?.name).toBe('web');
    expect(blockingBudget([{ type: 'NamespaceTerminating', message: 'namespace shop is being terminated' }])).toBeUndefined();
    expect(blockingBudget([])).toBeUndefined();
  });
});
