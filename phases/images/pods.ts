// The pods of a namespace as the gates read them, for imagePullCause (pull-cause.ts).
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { kubectl } from '../k3s/remote-k3s.ts';
import { imagePullCause, isAirGapped, placedBy } from './pull-cause.ts';

export async function podsImagePull(ctx: RunContext, host: HostRef, namespace: string): Promise<ReturnType<typeof imagePullCause>> {
  const res = await kubectl(ctx, host, `get pods -n ${namespace} -o json`).catch(() => undefined);
  if (res?.code !== 0) return undefined;
  return imagePullCause((JSON.parse(res.stdout).items as any[]) ?? [], isAirGapped(ctx.inventory), placedBy(ctx));
}
