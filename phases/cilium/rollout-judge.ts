// Whether the cilium DaemonSet has rolled out, and which of its pods run the current pod template, judged as
// upstream judges them. Pure.
//   Rolled out: `kubectl rollout status`'s verdict (kubernetes/kubectl v0.33.5
//     pkg/polymorphichelpers/rollout_status.go DaemonSetStatusViewer): the controller has observed this
//     generation (metadata.generation <= status.observedGeneration), and updatedNumberScheduled and
//     numberAvailable reach desiredNumberScheduled. metadata.generation moves on ANY spec change (a new
//     rollout width too), so it says nothing about the pods (kubernetes/kubernetes @152b09ac
//     pkg/registry/apps/daemonset/strategy.go PrepareForUpdate).
//   A current pod: its `controller-revision-hash` label is the hash of the DaemonSet's current
//     ControllerRevision, the one of the highest revision once the controller has observed the generation
//     (kubernetes/kubernetes @7e74f25f pkg/controller/daemon/update.go constructHistory bumps the matching
//     revision to the top; kubernetes/kubernetes @05c351a9 pkg/controller/daemon/util/daemonset_util.go IsPodUpdated compares the hash). Not `pod-template-generation`: a template changed and
//     changed back gets a new template generation, but the controller finds the old revision, keeps its pods
//     and relabels nothing. Only when no ControllerRevision is readable does the label stand in, compared
//     with the DaemonSet's template generation (annotation `deprecated.daemonset.template.generation`), as the
//     controller labels new pods (daemon/util CreatePodTemplate).
const REVISION_HASH = 'controller-revision-hash';
const POD_TEMPLATE_GENERATION = 'pod-template-generation';
const TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

export interface RolloutVerdict {
  done: boolean;
  /** kubectl rollout status's words. */
  message: string;
}

export function daemonSetRollout(ds: any): RolloutVerdict {
  const name = ds?.metadata?.name ?? '';
  if ((ds?.spec?.updateStrategy?.type ?? 'RollingUpdate') !== 'RollingUpdate')
    return { done: false, message: 'rollout status is only available for RollingUpdate strategy type' };
  const st = ds?.status ?? {};
  const desired = st.desiredNumberScheduled ?? 0;
  if ((ds?.metadata?.generation ?? 0) > (st.observedGeneration ?? 0)) return { done: false, message: 'Waiting for daemon set spec update to be observed...' };
  if ((st.updatedNumberScheduled ?? 0) < desired)
    return {
      done: false,
      message: `Waiting for daemon set "${name}" rollout to finish: ${st.updatedNumberScheduled ?? 0} out of ${desired} new pods have been updated...`,
    };
  if ((st.numberAvailable ?? 0) < desired)
    return {
      done: false,
      message: `Waiting for daemon set "${name}" rollout to finish: ${st.numberAvailable ?? 0} of ${desired} updated pods are available...`,
    };
  return { done: true, message: `daemon set "${name}" successfully rolled out` };
}

/** The current ControllerRevision's hash; undefined until the controller has observed this generation. */
export function currentRevisionHash(ds: any, revisions: any[]): string | undefined {
  if (!ds || (ds.metadata?.generation ?? 0) > (ds.status?.observedGeneration ?? 0)) return undefined;
  const owned = revisions.filter((r) => (r.metadata?.ownerReferences ?? []).some((o: any) => o.controller && o.uid === ds.metadata?.uid));
  const top = owned.reduce<any>((best, r) => (best === undefined || (r.revision ?? 0) > (best.revision ?? 0) ? r : best), undefined);
  if (!top) return undefined;
  return top.metadata?.labels?.[REVISION_HASH] ?? String(top.metadata?.name ?? '').slice(`${ds.metadata?.name}-`.length);
}

/** Does this pod run the DaemonSet's current template? (No DaemonSet, or a pod without labels: it counts.) */
export function podIsCurrent(pod: any, ds: any, revisions: any[]): boolean {
  if (!ds) return true;
  const labels = pod?.metadata?.labels ?? {};
  if (revisions.some((r) => (r.metadata?.ownerReferences ?? []).some((o: any) => o.uid === ds.metadata?.uid))) {
    const hash = currentRevisionHash(ds, revisions);
    return hash !== undefined && labels[REVISION_HASH] === hash;
  }
  const generation = labels[POD_TEMPLATE_GENERATION];
  const template = ds.metadata?.annotations?.[TEMPLATE_GENERATION];
  return generation === undefined || template === undefined || generation === template;
}
