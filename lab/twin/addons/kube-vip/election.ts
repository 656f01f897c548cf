// Leader election on a coordination.k8s.io Lease as client-go's leaderelection does it (tryAcquireOrRenew):
// a lease is taken over only when its record has not changed for leaseDuration as observed by THIS
// candidate's clock (not by comparing timestamps written by another host), a holder renews by updating
// renewTime, and every change is a compare-and-swap on the resourceVersion.
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseIO {
  get(): Promise<{ spec: LeaseSpec; resourceVersion: string } | undefined>;
  create(spec: LeaseSpec): Promise<void>;
  update(spec: LeaseSpec, resourceVersion: string): Promise<void>;
}

/**
 * Which call of tryAcquireOrRenew failed: client-go logs each in its own words (kubernetes/client-go v0.32.3
 * tools/leaderelection/leaderelection.go: `error retrieving resource lock %v: %v` at line 436, `error initially
 * creating leader election record: %v` at 440, `Failed to update lock: %v` at 472).
 */
export type LeaseStep = 'get' | 'create' | 'update';

export class LeaseStepError extends Error {
  constructor(
    readonly step: LeaseStep,
    override readonly cause: Error,
  ) {
    super(cause.message);
  }
}

const step = async <T>(s: LeaseStep, f: () => Promise<T>): Promise<T> => {
  try {
    return await f();
  } catch (e) {
    throw new LeaseStepError(s, e instanceof Error ? e : new Error(String(e)));
  }
};

/** metav1.MicroTime as the apiserver writes it. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

export class Elector {
  private observedRecord = '';
  private observedTime = 0;

  constructor(
    private io: LeaseIO,
    private identity: string,
    private leaseDurationS: number,
    private clock: () => number = Date.now,
  ) {}

  /** True when this candidate holds the lease after the call. Throws what the API returned, as a LeaseStepError. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock();
    const fresh: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.leaseDurationS,
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    const cur = await step('get', () => this.io.get());
    if (!cur) {
      await step('create', () => this.io.create(fresh));
      this.observe(fresh, now);
      return true;
    }
    const rec = JSON.stringify(cur.spec);
    if (rec !== this.observedRecord) {
      this.observedRecord = rec;
      this.observedTime = now;
    }
    const holder = cur.spec.holderIdentity ?? '';
    const duration = (cur.spec.leaseDurationSeconds ?? this.leaseDurationS) * 1000;
    if (holder && holder !== this.identity && this.observedTime + duration > now) return false;
    const next: LeaseSpec =
      holder === this.identity
        ? { ...fresh, acquireTime: cur.spec.acquireTime ?? fresh.acquireTime, leaseTransitions: cur.spec.leaseTransitions ?? 0 }
        : { ...fresh, leaseTransitions: (cur.spec.leaseTransitions ?? 0) + 1 };
    await step('update', () => this.io.update(next, cur.resourceVersion));
    this.observe(next, now);
    return true;
  }

  /**
   * ReleaseOnCancel (kube-vip v0.9.2 pkg/cluster/clusterLeaderElection.go sets it): a leader that stops writes
   * a record with no holder and a one-second lease, so a standby takes over at its next retry instead of
   * waiting out the whole lease (kubernetes/client-go v0.32.3 tools/leaderelection/leaderelection.go release():
   * LeaseDurationSeconds 1, RenewTime and AcquireTime now, the transitions kept, HolderIdentity empty).
   * Returns whether the release was written; a failure is what client-go logs as "Failed to release lock".
   */
  async release(): Promise<boolean> {
    if (this.holder() !== this.identity) return true;
    const cur = await this.io.get();
    if (!cur || cur.spec.holderIdentity !== this.identity) return true;
    const now = microTime(this.clock());
    const released: LeaseSpec = { leaseDurationSeconds: 1, renewTime: now, acquireTime: now, leaseTransitions: cur.spec.leaseTransitions ?? 0 };
    await this.io.update(released, cur.resourceVersion);
    this.observe(released, this.clock());
    return true;
  }

  /** The holder last seen (for "new leader elected" lines). */
  holder(): string {
    try {
      return JSON.parse(this.observedRecord || '{}').holderIdentity ?? '';
    } catch {
      return '';
    }
  }

  private observe(spec: LeaseSpec, now: number): void {
    this.observedRecord = JSON.stringify(spec);
    this.observedTime = now;
  }
}
