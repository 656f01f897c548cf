// Which containers of a Cilium pod have a log worth reading, from the pod's status as kubelet reports it:
// the init container the pod is stuck on (running, failed, or in back-off after a failure — init containers
// run one at a time in order, so it is the first that has not completed), and the agent container once it
// has started. A container that never started has no log (`kubectl logs` fails with "is waiting to start").
export function containersToRead(pod: any): string[] {
  const out: string[] = [];
  const started = (c: any) => Boolean(c?.state?.running || c?.state?.terminated || c?.lastState?.terminated);
  for (const c of pod?.status?.initContainerStatuses ?? []) {
    if (c.state?.terminated?.exitCode === 0) continue;
    if (started(c)) out.push(c.name);
    break;
  }
  for (const c of pod?.status?.containerStatuses ?? []) if (started(c) || c.state?.waiting?.reason === 'CrashLoopBackOff') out.push(c.name);
  return out;
}

const statuses = (pod: any): any[] => [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])];
const backingOff = (c: any) => c?.state?.waiting?.reason === 'CrashLoopBackOff';

/**
 * The containers waiting out kubelet's back-off after a failed run (`<pod uid>/<container>` → restartCount):
 * what the gate's first look finds already failed. Their log is of that earlier run (kubelet serves the last
 * terminated run while the container waits), so it says nothing about a cause fixed since.
 */
export function backedOffContainers(pods: any[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pods) for (const c of statuses(p)) if (backingOff(c)) out.set(`${p?.metadata?.uid}/${c.name}`, c.restartCount ?? 0);
  return out;
}

/** Is this container's log still the one of the run that had failed at the first look (still in that back-off, not run since)? */
export function isStaleFailure(firstLook: Map<string, number>, pod: any, container: string): boolean {
  const before = firstLook.get(`${pod?.metadata?.uid}/${container}`);
  if (before === undefined) return false;
  const c = statuses(pod).find((x) => x.name === container);
  return backingOff(c) && (c.restartCount ?? 0) === before;
}
