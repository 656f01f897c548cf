// The Flux controllers inside the k3s twin: once a controller's Deployment exists in flux-system (the install
// manifest was applied) its pods are made and run (./pods.ts: the Deployment controller and the kubelet);
// while one of them runs with its container ready, source-, kustomize- and helm-controller reconcile, each
// only on the server that holds its leader-election Lease — one actor per controller in the cluster, as
// upstream. notification-controller only runs its pod.
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import type { PodLogs } from '../pod-logs.ts';
import { type Attempt, FLUX_NS, builtin, fluxElector } from './common.ts';
import { helmRound } from './helmrelease.ts';
import { kustomizeRound } from './kustomization.ts';
import { FluxPods, type FluxSeen } from './pods.ts';
import { sourceRound } from './source.ts';

/**
 * How often a controller tries its Lease: Flux's leader election retry period, 5 s by default (fluxcd/pkg
 * @0e9caec2 runtime/leaderelection/leaderelection.go, `leader-election-retry-period`); the holder renews at
 * that pace, a standby tries to take over at it.
 */
const FLUX_RETRY_PERIOD_MS = 5_000;

/** How long one read of flux-system's Deployments and pods serves the controllers' rounds (below a round's 2 s). */
const SEEN_FOR_MS = 1_000;

type Round = (ctx: AddonContext, lastRun: Map<string, Attempt>) => Promise<void>;

const CONTROLLERS: [string, Round | undefined][] = [
  ['source-controller', sourceRound],
  ['kustomize-controller', kustomizeRound],
  ['helm-controller', helmRound],
  ['notification-controller', undefined],
];

export class FluxControllers {
  private stopped = false;
  private timers: NodeJS.Timeout[] = [];
  private pods: FluxPods;
  private read?: { atMs: number; reading: Promise<FluxSeen> };

  constructor(
    private ctx: AddonContext,
    logs: PodLogs,
  ) {
    this.pods = new FluxPods(ctx, logs);
  }

  start(everyMs = 2000): void {
    for (const [i, [name, round]] of CONTROLLERS.entries()) {
      const elector = fluxElector(this.ctx, name);
      const lastRun = new Map<string, Attempt>();
      // The Lease is tried (acquired or renewed) once a retry period, not every round.
      let tried = { atMs: -Infinity, leader: false };
      const leading = async () => {
        if (Date.now() - tried.atMs < FLUX_RETRY_PERIOD_MS) return tried.leader;
        tried = { atMs: Date.now(), leader: await elector.tryAcquireOrRenew().catch(() => false) };
        return tried.leader;
      };
      const tick = async () => {
        try {
          const seen = await this.seen();
          const d = seen.deployments.find((x) => x.metadata?.name === name);
          const running = await this.pods.sync(name, d, seen);
          if (d && running && round && (await leading())) await round(this.ctx, lastRun);
        } catch (e) {
          if (!(e instanceof ApiError)) log.error(`${name} (Flux twin): ${(e as Error).message}`);
        }
        if (!this.stopped) this.timers[i] = setTimeout(tick, everyMs);
      };
      void tick();
    }
  }

  /**
   * The Deployments, pods and Nodes the four controllers' rounds start from, read once for the rounds that
   * start within SEEN_FOR_MS of each other: each round comes at least a round's interval after its own last
   * writes, so a read that young includes them.
   */
  private seen(): Promise<FluxSeen> {
    const now = Date.now();
    if (!this.read || now - this.read.atMs >= SEEN_FOR_MS) {
      const reading = Promise.all([
        this.ctx.store.list(builtin('deployments'), FLUX_NS),
        this.ctx.store.list(builtin('pods'), FLUX_NS),
        this.ctx.store.list(builtin('nodes')),
      ]).then(([d, p, n]) => ({ deployments: d.items, pods: p.items, nodes: n.items }));
      this.read = { atMs: now, reading };
      // A failed read is not kept: the next round reads again.
      reading.catch(() => {
        if (this.read?.reading === reading) this.read = undefined;
      });
    }
    return this.read.reading;
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.pods.stop();
  }
}
