// The Flux controllers inside the k3s twin: once a controller's Deployment exists in flux-system (the install
// manifest was applied) its pods are made and run (./pods.ts: the Deployment controller and the kubelet);
// while one of them runs with its container ready, source-, kustomize- and helm-controller reconcile, each
// only on the server that holds its leader-election Lease — one actor per controller in the cluster, as
// upstream. notification-controller only runs its pod.
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import type { PodLogs } from '../pod-logs.ts';
import { type Attempt, controllerDeployment, fluxElector } from './common.ts';
import { helmRound } from './helmrelease.ts';
import { kustomizeRound } from './kustomization.ts';
import { FluxPods } from './pods.ts';
import { sourceRound } from './source.ts';

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
      const tick = async () => {
        try {
          const d = await controllerDeployment(this.ctx, name);
          const running = await this.pods.sync(name, d);
          if (d && running && round && (await elector.tryAcquireOrRenew().catch(() => false))) await round(this.ctx, lastRun);
        } catch (e) {
          if (!(e instanceof ApiError)) log.error(`${name} (Flux twin): ${(e as Error).message}`);
        }
        if (!this.stopped) this.timers[i] = setTimeout(tick, everyMs);
      };
      void tick();
    }
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.pods.stop();
  }
}
