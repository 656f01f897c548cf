// The pods of a namespace as the gates read them, for imagePullCause (pull-cause.ts).
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { kubectl } from '../k3s/remote-k3s.ts';
import { imagePullCause, isAirGapped, placedBy } from './pull-cause.ts';

/** The namespace's pods, or undefined when they cannot be read. */
export async function readPods(ctx: RunContext, host: HostRef, namespace: string): Promise<any[] | undefined> {
  const res = await kubectl(ctx, host, `get pods -n ${namespace} -o json`).catch(() => undefined);
  if (res?.code !== 0) return undefined;
  return (JSON.parse(res.stdout).items as any[]) ?? [];
}

export async function podsImagePull(ctx: RunContext, host: HostRef, namespace: string): Promise<ReturnType<typeof imagePullCause>> {
  const pods = await readPods(ctx, host, namespace);
  return pods ? podsPullCause(ctx, pods) : undefined;
}

/** imagePullCause for pods already read, with the run's air-gap and placement facts. */
export const podsPullCause = (ctx: RunContext, pods: any[]) => imagePullCause(pods, isAirGapped(ctx.inventory), placedBy(ctx));
