// The install of the HelmChart this run wrote. Writing the manifest changes nothing in the cluster at once:
// k3s's deploy controller applies it, its helm-controller sees a new config and runs the install Job, whose
// `helm upgrade --install` stores a new release revision and only then updates the DaemonSet. A rollout gate
// that looks before that sees the OLD DaemonSet, fully rolled out, and passes with values the cluster does
// not run yet. So the HelmChart step notes the highest revision of the release before it writes, and the
// gate first waits for a revision above it with status `deployed`.
// Read from the release Secrets' labels only (helm/helm v3 pkg/storage/driver/secrets.go: `owner=helm`,
// `name=<release>`, `status`, `version`; the Secret's data holds the rendered manifest, keys of the chart's
// generated certificates included, so it is never read). A `failed` revision is no stop: helm-controller's
// Job retries (k3s-io/helm-controller pkg/controllers/chart/chart.go: the Job's backoffLimit).
import { hostFact } from '../../src/engine/facts.ts';
import type { ProbeCommand, Step } from '../../src/engine/phase.ts';
import { ciliumRelease } from '../../src/gitops/cilium-release.ts';
import type { ApiRead } from '../../src/kube/api-read.ts';
import { objectsOf } from '../../src/kube/resources.ts';

export type HelmReleaseRef = {
  name: string;
  namespace: string;
};

/** What the gate waits for: a revision of `release` above `before` deployed. */
export type PendingInstall = {
  release: HelmReleaseRef;
  before: number;
};

/** Set by the HelmChart step when it plans a write; absent: nothing to wait for (the same HelmChart, or Flux owns Cilium). */
export const ciliumInstall = hostFact<PendingInstall>('ciliumInstall');

export interface Revision {
  version: number;
  status: string;
}

/** `kubectl get secrets … -o jsonpath` printing `<version> <status>` per release revision (labels only). */
export function revisionsQuery(r: HelmReleaseRef): string {
  return `get secrets -n ${r.namespace} -l owner=helm,name=${r.name} -o jsonpath='{range .items[*]}{.metadata.labels.version} {.metadata.labels.status}{"\\n"}{end}'`;
}

/**
 * The release's revisions as a probe: through the API, the Secrets as a Table of their metadata (their data
 * never leaves the server), printed as the jsonpath above prints them; on the host, that kubectl.
 */
export function revisionsProbe(r: HelmReleaseRef): ProbeCommand {
  const read = revisionsRead(r);
  return {
    command: `k3s kubectl ${revisionsQuery(r)}`,
    sudo: true,
    api: { gets: [{ path: read.path, table: true }], print: ([list]) => read.print(list) },
  };
}

/** The same read for a gate's looks (src/kube/api-read.ts apiRead): through the run's SSH connection, that kubectl without it. */
export function revisionsRead(r: HelmReleaseRef): ApiRead & { print: (list: any) => string } {
  return {
    path: `/api/v1/namespaces/${r.namespace}/secrets?labelSelector=${encodeURIComponent(`owner=helm,name=${r.name}`)}`,
    kubectl: revisionsQuery(r),
    table: true,
    print: (list) =>
      objectsOf(list)
        .map((o) => `${o.metadata?.labels?.version ?? ''} ${o.metadata?.labels?.status ?? ''}\n`)
        .join(''),
  };
}

export function parseRevisions(stdout: string): Revision[] {
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([v, s]) => /^\d+$/.test(v ?? '') && s)
    .map(([v, s]) => ({ version: Number(v), status: s! }));
}

const highestRevision = (revs: Revision[]) => revs.reduce((m, r) => Math.max(m, r.version), 0);

/** Has a revision newer than the one seen before the write been deployed? (Helm supersedes it once a later one deploys.) */
export function installed(p: PendingInstall, revs: Revision[]): boolean {
  return revs.some((r) => r.version > p.before && (r.status === 'deployed' || r.status === 'superseded'));
}

/** kubectl-style words for where the install is, for the evidence of a gate that ran out. */
export function installState(p: PendingInstall, revs: Revision[]): string {
  const newer = revs.filter((r) => r.version > p.before).sort((a, b) => a.version - b.version);
  const deployed = revs.filter((r) => r.status === 'deployed').map((r) => r.version);
  const now = deployed.length ? `deployed revision ${Math.max(...deployed)}` : 'no deployed revision';
  return `the HelmChart this run wrote is not installed: Helm release ${p.release.namespace}/${p.release.name} has ${now}${newer.length ? `; newer: ${newer.map((r) => `${r.version} ${r.status}`).join(', ')}` : '; no newer revision'}`;
}

/**
 * The HelmChart step, noting the release's revisions before it writes: when it plans a change, the fact
 * `ciliumInstall` (a PendingInstall) tells the gate to wait for that install. A step that plans nothing (the
 * same HelmChart, or Flux owns Cilium) notes nothing.
 */
export function notingRelease(step: Step): Step {
  const release = (ctx: Parameters<NonNullable<Step['probe']>>[1]): HelmReleaseRef => ctx.facts.need(ciliumRelease).release;
  return {
    ...step,
    probe: (host, ctx): Record<string, ProbeCommand> => ({
      ...step.probe?.(host, ctx),
      helmReleaseRevisions: revisionsProbe(release(ctx)),
    }),
    plan: (input) => {
      const plan = step.plan(input);
      if (!plan.changes.length) return plan;
      const seen = input.probe.helmReleaseRevisions;
      const before = seen?.code === 0 ? highestRevision(parseRevisions(seen.stdout)) : 0;
      const pending: PendingInstall = { release: release(input.ctx), before };
      return { ...plan, facts: [...(plan.facts ?? []), ciliumInstall(pending)] };
    },
  };
}
