// The Flux controllers' pods, imitated inside the k3s twin: each of source-, kustomize- and helm-controller
// acts once its Deployment exists in flux-system (the install manifest was applied), reports that
// Deployment available, and reconciles only on the server that holds its leader-election Lease — one
// actor per controller in the cluster, as upstream. notification-controller only reports its Deployment.
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import { type Attempt, controllerDeployment, fluxElector, markDeploymentAvailable } from './common.ts';
import { helmRound } from './helmrelease.ts';
import { kustomizeRound } from './kustomization.ts';
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

  constructor(private ctx: AddonContext) {}

  start(everyMs = 2000): void {
    for (const [i, [name, round]] of CONTROLLERS.entries()) {
      const elector = fluxElector(this.ctx, name);
      const lastRun = new Map<string, Attempt>();
      const tick = async () => {
        try {
          const d = await controllerDeployment(this.ctx, name);
          if (d) {
            await markDeploymentAvailable(this.ctx, d);
            if (round && (await elector.tryAcquireOrRenew().catch(() => false))) await round(this.ctx, lastRun);
          }
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
  }
}
