// client-go's lease election as the kube-vip twin runs it, with a fake clock and an in-memory Lease.
import { describe, expect, it } from 'vitest';
import { Elector, type LeaseIO, type LeaseSpec } from '../../lab/twin/addons/kube-vip/election.ts';

function memoryLease() {
  let lease: { spec: LeaseSpec; resourceVersion: string } | undefined;
  let rv = 0;
  const io: LeaseIO = {
    get: async () => (lease ? { spec: { ...lease.spec }, resourceVersion: lease.resourceVersion } : undefined),
    create: async (spec) => {
      if (lease) throw new Error('AlreadyExists');
      lease = { spec, resourceVersion: String(++rv) };
    },
    update: async (spec, v) => {
      if (!lease || lease.resourceVersion !== v) throw new Error('Conflict');
      lease = { spec, resourceVersion: String(++rv) };
    },
  };
  return { io, current: () => lease?.spec };
}

describe('lease election (client-go tryAcquireOrRenew)', () => {
  it('the first candidate creates the lease with itself as holder; the others wait', async () => {
    let now = 1_000_000;
    const m = memoryLease();
    const a = new Elector(m.io, 'k3s-lab-1', 15, () => now);
    const b = new Elector(m.io, 'k3s-lab-2', 15, () => now);
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    expect(m.current()).toMatchObject({ holderIdentity: 'k3s-lab-1', leaseDurationSeconds: 15, leaseTransitions: 0 });
    now += 2000;
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(m.current()?.renewTime).not.toBe(m.current()?.acquireTime);
  });

  it('a holder that stops renewing loses the lease once leaseDuration passed on the follower clock, not before', async () => {
    let now = 5_000_000;
    const m = memoryLease();
    const a = new Elector(m.io, 'k3s-lab-1', 15, () => now);
    const b = new Elector(m.io, 'k3s-lab-2', 15, () => now);
    await a.tryAcquireOrRenew();
    expect(await b.tryAcquireOrRenew()).toBe(false); // b observes the record now
    now += 14_000;
    expect(await b.tryAcquireOrRenew()).toBe(false);
    now += 2_000;
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(m.current()).toMatchObject({ holderIdentity: 'k3s-lab-2', leaseTransitions: 1 });
    // The old holder comes back: the record changed, so it waits a full lease duration again.
    expect(await a.tryAcquireOrRenew()).toBe(false);
  });

  it('a renewing holder keeps the lease however long it runs', async () => {
    let now = 0;
    const m = memoryLease();
    const a = new Elector(m.io, 'a', 15, () => now);
    const b = new Elector(m.io, 'b', 15, () => now);
    await a.tryAcquireOrRenew();
    for (let i = 0; i < 30; i++) {
      now += 2000;
      expect(await a.tryAcquireOrRenew()).toBe(true);
      expect(await b.tryAcquireOrRenew()).toBe(false);
    }
  });
});
