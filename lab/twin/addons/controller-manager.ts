// The controllers of kube-controller-manager the twin plays for plain workloads — the Deployment controller
// (./deployments.ts) and the disruption controller (./disruption.ts) — on one server at a time: the holder
// of the Lease kube-system/kube-controller-manager, as upstream's leader election (identity
// `<host>_<uuid>`, lease 15 s: kubernetes/kubernetes v1.33.5 cmd/kube-controller-manager/app/
// controllermanager.go, staging/src/k8s.io/component-base/config/v1alpha1/defaults.go
// RecommendedDefaultLeaderElectionConfiguration). A round every 2 s, its retry period: the lease is renewed
// at that pace upstream too, and a round a second wrote etcd every second on a lab of 2 cores.
import { randomUUID } from 'node:crypto';
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';
import { log } from '../log.ts';
import type { AddonContext } from './context.ts';
import { deploymentRound } from './deployments.ts';
import { disruptionRound } from './disruption.ts';
import { Elector, type LeaseSpec } from './kube-vip/election.ts';

const LEASES = BUILTIN.find((x) => x.resource === 'leases')!;
const NS = 'kube-system';
const NAME = 'kube-controller-manager';
const ROUND_MS = 2000;

function elector(ctx: AddonContext): Elector {
  const io = {
    get: async () => {
      const l = await ctx.store.tryGet(LEASES, NS, NAME);
      return l ? { spec: l.spec as LeaseSpec, resourceVersion: l.metadata.resourceVersion } : undefined;
    },
    create: async (spec: LeaseSpec) => {
      await ctx.store.create(LEASES, NS, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: NAME, namespace: NS }, spec });
    },
    update: async (spec: LeaseSpec, rv: string) => {
      const cur = await ctx.store.get(LEASES, NS, NAME);
      await ctx.store.update(LEASES, NS, NAME, { ...cur, spec }, { expectedRV: rv });
    },
  };
  return new Elector(io, `${ctx.node}_${randomUUID()}`, 15);
}

export class ControllerManager {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private boundAt = new Map<string, number>();

  constructor(private ctx: AddonContext) {}

  start(): void {
    const lease = elector(this.ctx);
    const tick = async () => {
      try {
        if (await lease.tryAcquireOrRenew().catch(() => false)) {
          await deploymentRound(this.ctx, this.boundAt);
          await disruptionRound(this.ctx);
        } else this.boundAt.clear();
      } catch (e) {
        if (!(e instanceof ApiError)) log.error(`kube-controller-manager (twin): ${(e as Error).message}`);
      }
      if (!this.stopped) this.timer = setTimeout(tick, ROUND_MS);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
