// imagePullCause (pull-cause.ts) for pods a gate has read, with the run's air-gap and placement facts: the
// one way every gate (kube-vip, Cilium, Flux) asks it.
import type { ReadContext } from '../engine/context.ts';
import { imagePullCause, isAirGapped, placedBy } from './pull-cause.ts';

/** imagePullCause for pods already read, with the run's air-gap and placement facts. */
export const podsPullCause = (ctx: ReadContext, pods: any[]) => imagePullCause(pods, isAirGapped(ctx.inventory), placedBy(ctx));
