// IMAGE_NOT_AVAILABLE from what the kubelet reports on pods (kubernetes/kubernetes v1.33
// pkg/kubelet/images: container state waiting, reason ErrImagePull with the runtime's pull error, then
// ImagePullBackOff with "Back-off pulling image "<image>""): which image, on which node, and what to add to
// the artifacts. Pure; the add-on gates pass the pods they already read.
import { CauseError } from '../errors.ts';
import { hostFact, type FactsView } from '../engine/facts.ts';

const PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff']);

export interface PullFailure {
  pod: string;
  namespace: string;
  node: string;
  container: string;
  image: string;
  reason: string;
  message: string;
}

/** Every container (init containers too) waiting on an image pull. */
export function pullFailures(pods: any[]): PullFailure[] {
  const out: PullFailure[] = [];
  for (const p of pods) {
    const specImage = (name: string) => [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].find((c: any) => c.name === name)?.image;
    for (const s of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]) {
      const w = s?.state?.waiting;
      if (!w || !PULL_REASONS.has(w.reason)) continue;
      out.push({
        pod: p.metadata?.name,
        namespace: p.metadata?.namespace,
        node: p.spec?.nodeName ?? '',
        container: s.name,
        image: specImage(s.name) ?? s.image,
        reason: w.reason,
        message: w.message ?? '',
      });
    }
  }
  return out;
}

/**
 * The cause for the first pod waiting on a pull, or undefined. `decided`: the gate may stop now. On an
 * air-gapped site no registry will ever answer, so waiting changes nothing, unless this run has just put
 * archives on that node (`placedNow`): the kubelet then finds the image at its next pull, which comes only
 * when its back-off ends (10 s doubling to 5 min), so the gate waits for it. Elsewhere the gate names it
 * only when its budget ends, since a registry may recover.
 */
export function imagePullCause(
  pods: any[],
  airGapped: boolean,
  placedNow: (node: string) => boolean = () => false,
): { cause: CauseError; decided: boolean } | undefined {
  const failures = pullFailures(pods);
  if (!failures.length) return undefined;
  const f = failures.find((x) => !placedNow(x.node)) ?? failures[0];
  const pinned = f.image.includes('@sha256:');
  const add = pinned ? 'an OCI archive holding it (the reference pins a digest; a docker save archive keeps tags only)' : 'an archive holding it';
  const seen = `pod ${f.namespace}/${f.pod} on ${f.node}: container ${f.container} waiting ${f.reason}: ${f.message}`;
  const cause = new CauseError('IMAGE_NOT_AVAILABLE', {
    host: f.node,
    message: `${f.image} is not on ${f.node} and cannot be pulled: add ${add} to k3s.imageArchives`,
    evidence: { command: `kubectl get pod -n ${f.namespace} ${f.pod} -o jsonpath='{.status.containerStatuses[*].state.waiting}'`, seen, excerpt: f.image },
    retryable: !airGapped,
  });
  return { cause, decided: airGapped && !placedNow(f.node) };
}

/** The fact the k3s install steps set on a host whose image archives this run uploaded. */
export const imagesPlaced = hostFact<boolean>('k3sImagesChanged');

/** True when the inventory names add-on image archives: the site pulls from no registry. */
export const isAirGapped = (inv: { derived: { paths: { imageArchives?: unknown[] } } } | undefined) => (inv?.derived.paths.imageArchives?.length ?? 0) > 0;

/** Did this run upload image archives to the node? (facts of the k3s install steps, per host) */
export const placedBy = (ctx: { facts?: Pick<FactsView, 'get'> }) => (node: string) => ctx.facts?.get(node, imagesPlaced) === true;
