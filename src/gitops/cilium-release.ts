// Cilium's release as the GitOps checkout renders it, ONCE a run: the cilium phase installs it (its
// HelmChart), the flux phase hands it over to the HelmRelease and proves parity against the same values,
// and node-baseline's image check reads its images. Whichever prepare needs it first renders it
// (src/engine/facts.ts Facts.once); the others get the same render, or the same stop.
import type { PrepareContext } from '../engine/context.ts';
import { runFact } from '../engine/facts.ts';
import { ciliumValuesFor, type CiliumValues } from './values-source.ts';

export interface CiliumRelease {
  /** The bootstrap's HelmChart (kube-system/<release name>). */
  helmChart: { name: string; namespace: string };
  /** The HelmRelease at cilium.helmRelease, as Flux names it. */
  helmRelease: { name: string; namespace: string };
  /** The Helm release itself: its name and the namespace its objects (and storage Secrets) go to. */
  release: { name: string; namespace: string };
  /** The values the bootstrap renders from the checkout (what its HelmChart installs, Flux reconciles). */
  values: Record<string, unknown>;
  /** Everything read from the checkout (chart version, namespaces, variables). */
  source: CiliumValues;
}

/** Set by the first prepare that renders it; the cilium and flux phases' steps and gates read it with need. */
export const ciliumRelease = runFact<CiliumRelease>('cilium.release');

function releaseOf(source: CiliumValues): CiliumRelease {
  return {
    helmChart: { name: source.releaseName, namespace: 'kube-system' },
    helmRelease: source.helmRelease,
    release: { name: source.releaseName, namespace: source.namespace },
    values: source.values,
    source,
  };
}

/** The run's render (throws the render's CauseError/CauseErrors, to every caller alike). */
export const renderCiliumRelease = (ctx: PrepareContext): Promise<CiliumRelease> =>
  ctx.once(ciliumRelease, async () => releaseOf(await ciliumValuesFor(ctx.inventory)));
