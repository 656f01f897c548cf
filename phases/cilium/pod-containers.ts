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
