// Flux's helm-controller (fluxcd/helm-controller, HelmRelease helm.toolkit.fluxcd.io/v2,
// internal/reconcile/atomic_release.go + action/*) for the chart the lab knows (Cilium): the chart source
// must exist (a HelmRepository); the release name defaults as upstream (releaseName, else
// `<targetNamespace>-<name>` with a targetNamespace, else `<name>`), in targetNamespace, stored in
// storageNamespace. A release of that name that this HelmRelease has not recorded in its history (the one
// k3s's helm-controller installed from the bootstrap's HelmChart) is ADOPTED by an upgrade, as upstream
// does for an unmanaged release: same values render the same objects (the Cilium DaemonSet's template does
// not change, so no agent rolls), other values re-render them (the agents roll). Rendering and the release
// record are the k3s helm-controller twin's (lab/twin/addons/helm), so equal values mean equal objects.
import { createHash } from 'node:crypto';
import YAML from 'yaml';
import type { ResourceInfo } from '../../api/resources.ts';
import { log } from '../../log.ts';
import { type AddonContext, nowIso } from '../context.ts';
import { renderCilium } from '../helm/cilium-chart.ts';
import { decodeRelease, releaseSecret, type ReleaseInput } from '../helm/release.ts';
import { tgzFiles } from '../helm/tgz.ts';
import { coalesce } from '../helm/values.ts';
import {
  type Attempt,
  type Condition,
  DEPENDENCY_REQUEUE_MS,
  builtin,
  due,
  findKind,
  handled,
  intervalRequeue,
  observed,
  withConditions,
  writeStatus,
} from './common.ts';
import { collectHelmReleases, recordHelmRelease } from './garbage.ts';

const HR_API = 'helm.toolkit.fluxcd.io/v2';
const SECRETS = builtin('secrets');

export function releaseNameOf(hr: any): string {
  if (hr.spec?.releaseName) return hr.spec.releaseName;
  if (hr.spec?.targetNamespace) return `${hr.spec.targetNamespace}-${hr.metadata.name}`;
  return hr.metadata.name;
}

/** helm-controller's config digest of the values (chartutil values → sha256 of their JSON). */
export const configDigest = (values: unknown) =>
  `sha256:${createHash('sha256')
    .update(JSON.stringify(values ?? {}))
    .digest('hex')}`;

export const releaseMessage = (action: 'install' | 'upgrade', ns: string, name: string, version: number, chart: string, chartVersion: string) =>
  `Helm ${action} succeeded for release ${ns}/${name}.v${version} with chart ${chart}@${chartVersion}`;

interface Chart {
  meta: any;
  defaults: any;
}

/** The chart's metadata and default values: from the release record Helm kept, or from a k3s HelmChart that carries the chart. */
async function knownChart(ctx: AddonContext, name: string, latest: any | undefined): Promise<Chart | undefined> {
  if (latest?.chart?.metadata?.name === name) return { meta: latest.chart.metadata, defaults: latest.chart.values ?? {} };
  const charts = await findKind(ctx, 'helm.cattle.io/v1', 'HelmChart');
  for (const hc of charts ? (await ctx.store.list(charts)).items : []) {
    if (!hc.spec?.chartContent) continue;
    const files = tgzFiles(Buffer.from(String(hc.spec.chartContent).replace(/\s+/g, ''), 'base64'));
    const top = [...files.keys()][0]?.split('/')[0];
    const meta = YAML.parse(files.get(`${top}/Chart.yaml`)?.toString('utf8') ?? '{}');
    if (meta?.name === name) return { meta, defaults: YAML.parse(files.get(`${top}/values.yaml`)?.toString('utf8') ?? '{}') ?? {} };
  }
  return undefined;
}

async function applyObject(ctx: AddonContext, o: any): Promise<void> {
  const i = await ctx.registry.findKind(o.apiVersion, o.kind);
  if (!i)
    throw new Error(
      `resource mapping not found for name: "${o.metadata.name}" namespace: "${o.metadata.namespace ?? ''}" from "": no matches for kind "${o.kind}" in version "${o.apiVersion}"`,
    );
  const ns = i.namespaced ? o.metadata.namespace : undefined;
  const cur = await ctx.store.tryGet(i, ns, o.metadata.name);
  if (!cur) await ctx.store.create(i, ns, o);
  else
    await ctx.store.update(
      i,
      ns,
      o.metadata.name,
      { ...o, metadata: { ...cur.metadata, labels: o.metadata.labels, annotations: o.metadata.annotations } },
      { keepStatus: true },
    );
}

/** The Stalled condition helm-controller writes once an action failed more often than its remediation retries allow (default 0). */
const retriesExceeded = (action: string, failures: number) => `Failed to ${action} after ${failures} attempt(s)`;

/** Resolves with the requeue the attempt asks for, in ms. */
async function reconcileHelmRelease(ctx: AddonContext, info: ResourceInfo, hr: any): Promise<number> {
  const gen = hr.metadata.generation ?? 1;
  const hrNs = hr.metadata.namespace;
  const release = releaseNameOf(hr);
  const targetNs = hr.spec?.targetNamespace || hrNs;
  const storageNs = hr.spec?.storageNamespace || hrNs;
  const chartSpec = hr.spec?.chart?.spec ?? {};
  const values = hr.spec?.values ?? {};
  const digest = configDigest(values);
  // The source not ready yet: errWaitForChart, so observedGeneration is not written; back in 30 s.
  const notReady = async (message: string) => {
    const conds: Condition[] = [{ type: 'Ready', status: 'False', reason: 'SourceNotReady', message, observedGeneration: gen }];
    await writeStatus(ctx, info, hr, { ...(hr.status ?? {}), ...handled(hr), conditions: withConditions(hr.status?.conditions, conds) });
    return DEPENDENCY_REQUEUE_MS;
  };

  const ref = chartSpec.sourceRef ?? {};
  const srcNs = ref.namespace ?? hrNs;
  const helmChartName = `${srcNs}/${hrNs}-${hr.metadata.name}`;
  const srcInfo = await findKind(ctx, 'source.toolkit.fluxcd.io/v1', ref.kind ?? 'HelmRepository');
  if (!srcInfo || !(await ctx.store.tryGet(srcInfo, srcNs, ref.name))) {
    // helm-controller's isSourceReady on the HelmChart it made, whose own Ready says why (source-controller
    // helmchart_controller.go: "failed to get source: …").
    return notReady(
      `HelmChart '${helmChartName}' is not ready: failed to get source: ${String(ref.kind ?? 'HelmRepository')
        .toLowerCase()
        .replace(/y$/, 'ie')}s.source.toolkit.fluxcd.io "${ref.name}" not found`,
    );
  }
  const history = (await ctx.store.list(SECRETS, storageNs)).items.filter((s) => s.metadata.labels?.owner === 'helm' && s.metadata.labels?.name === release);
  const latestSecret = history.reduce<any>((m, s) => (!m || Number(s.metadata.labels.version) > Number(m.metadata.labels.version) ? s : m), undefined);
  const latest = latestSecret ? decodeRelease(latestSecret.data.release) : undefined;
  const lastVersion = latest ? Number(latest.version) : 0;
  const mine = hr.status?.history?.[0];
  // In sync: this HelmRelease made the latest release, with these values and this chart.
  if (
    mine &&
    latest &&
    mine.version === lastVersion &&
    mine.configDigest === digest &&
    mine.chartVersion === (chartSpec.version ?? mine.chartVersion) &&
    latest.info?.status === 'deployed'
  ) {
    // Nothing to do, but a reconcile request is answered (status.lastHandledReconcileAt) as upstream does.
    const r = (hr.status?.conditions ?? []).find((c: Condition) => c.type === 'Ready');
    const conditions =
      r?.status === 'True'
        ? hr.status.conditions
        : withConditions(hr.status?.conditions, [
            { type: 'Ready', status: 'True', reason: r?.reason ?? 'UpgradeSucceeded', message: r?.message ?? '', observedGeneration: gen },
          ]);
    await writeStatus(ctx, info, hr, { ...(hr.status ?? {}), ...handled(hr), ...observed(hr), conditions });
    return intervalRequeue(hr.spec?.interval);
  }
  const action: 'install' | 'upgrade' = latest ? 'upgrade' : 'install';
  const failedReason = action === 'install' ? 'InstallFailed' : 'UpgradeFailed';
  const chart = await knownChart(ctx, chartSpec.chart, latest);
  if (!chart) return notReady(`HelmChart '${helmChartName}' is not ready: chart "${chartSpec.chart}" is not one the lab carries (no network in the lab)`);
  const version = lastVersion + 1;
  const chartVersion = String(chartSpec.version ?? chart.meta.version);
  // Set before the action runs, so a failed one is on record too (helmrelease_controller.go reconcileRelease).
  const attempted = {
    lastAttemptedGeneration: gen,
    lastAttemptedConfigDigest: digest,
    lastAttemptedRevision: chartVersion,
    lastAttemptedReleaseAction: action,
  };
  const failuresKey = action === 'install' ? 'installFailures' : 'upgradeFailures';
  // Out of retries for this chart and these values (MustResetFailures resets only on a change of
  // either): no new action, the object stays Stalled (ErrExceededMaxRetries, a terminal error).
  const stalled = (hr.status?.conditions ?? []).some((c: Condition) => c.type === 'Stalled' && c.status === 'True');
  if (stalled && hr.status?.lastAttemptedConfigDigest === digest && hr.status?.lastAttemptedRevision === chartVersion) {
    await writeStatus(ctx, info, hr, { ...(hr.status ?? {}), ...handled(hr), ...observed(hr), lastAttemptedGeneration: gen });
    return intervalRequeue(hr.spec?.interval);
  }
  const fail = async (message: string) => {
    // With the default remediation (retries 0) one failure exhausts the retries: Stalled RetriesExceeded,
    // Reconciling gone, observedGeneration written (a terminal error). Remediation retries are not imitated.
    const reset = hr.status?.lastAttemptedConfigDigest !== digest || hr.status?.lastAttemptedRevision !== chartVersion;
    const failures = (reset ? 0 : Number(hr.status?.[failuresKey] ?? 0)) + 1;
    const conds: Condition[] = [
      { type: 'Ready', status: 'False', reason: failedReason, message, observedGeneration: gen },
      { type: 'Released', status: 'False', reason: failedReason, message, observedGeneration: gen },
      { type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: retriesExceeded(action, failures), observedGeneration: gen },
    ];
    await writeStatus(ctx, info, hr, {
      ...(hr.status ?? {}),
      ...handled(hr),
      ...observed(hr),
      conditions: withConditions(hr.status?.conditions, conds, ['Reconciling']),
      ...attempted,
      [failuresKey]: failures,
    });
    return intervalRequeue(hr.spec?.interval);
  };
  try {
    if (chart.meta.name !== 'cilium') throw new Error(`chart ${chart.meta.name}: the twin's helm-controller renders only the cilium chart`);
    const rendered = renderCilium(coalesce(chart.defaults, values), targetNs, release);
    const origin = { 'helm.toolkit.fluxcd.io/name': hr.metadata.name, 'helm.toolkit.fluxcd.io/namespace': hrNs };
    for (const o of rendered.objects) await applyObject(ctx, { ...o, metadata: { ...o.metadata, labels: { ...(o.metadata.labels ?? {}), ...origin } } });
    const rec: ReleaseInput = {
      name: release,
      namespace: targetNs,
      version,
      status: 'deployed',
      chartMetadata: { ...chart.meta, version: chartVersion },
      chartValues: chart.defaults,
      config: values,
      manifest: rendered.manifest,
      firstDeployed: latest?.info?.first_deployed ?? nowIso(),
      description: action === 'install' ? 'Install complete' : 'Upgrade complete',
    };
    await ctx.store.create(SECRETS, storageNs, releaseSecret(rec));
    for (const s of history.filter((x) => x.metadata.labels?.status === 'deployed')) {
      await ctx.store
        .update(SECRETS, storageNs, s.metadata.name, { ...s, metadata: { ...s.metadata, labels: { ...s.metadata.labels, status: 'superseded' } } })
        .catch(() => undefined);
    }
    await recordHelmRelease(ctx, hrNs, hr.metadata.name, { release, storageNamespace: storageNs });
    log.info(`helm-controller (Flux): ${action} of ${targetNs}/${release} v${version} for HelmRelease ${hrNs}/${hr.metadata.name}`);
  } catch (e) {
    return fail(`Helm ${action} failed for release ${targetNs}/${release} with chart ${chartSpec.chart}@${chartVersion}: ${(e as Error).message}`);
  }
  const reason = action === 'install' ? 'InstallSucceeded' : 'UpgradeSucceeded';
  const message = releaseMessage(action, targetNs, release, version, chartSpec.chart, chartVersion);
  const now = nowIso();
  const snapshot = {
    name: release,
    namespace: targetNs,
    version,
    status: 'deployed',
    chartName: chartSpec.chart,
    chartVersion,
    appVersion: chart.meta.appVersion,
    configDigest: digest,
    firstDeployed: latest?.info?.first_deployed ?? now,
    lastDeployed: now,
  };
  await writeStatus(ctx, info, hr, {
    ...handled(hr),
    ...observed(hr),
    conditions: withConditions(
      hr.status?.conditions,
      [
        { type: 'Ready', status: 'True', reason, message, observedGeneration: gen },
        { type: 'Released', status: 'True', reason, message, observedGeneration: gen },
      ],
      ['Reconciling', 'Stalled', 'Remediated'],
    ),
    helmChart: helmChartName,
    storageNamespace: storageNs,
    history: [snapshot, ...(hr.status?.history ?? [])].slice(0, 5),
    ...attempted,
  });
  return intervalRequeue(hr.spec?.interval);
}

export async function helmRound(ctx: AddonContext, lastRun: Map<string, Attempt>): Promise<void> {
  const info = await findKind(ctx, HR_API, 'HelmRelease');
  if (!info) return;
  await collectHelmReleases(ctx, info);
  for (const hr of (await ctx.store.list(info)).items) {
    if (hr.spec?.suspend) continue;
    const key = `${hr.metadata.namespace}/${hr.metadata.name}`;
    if (!due(hr, lastRun.get(key))) continue;
    const at = Date.now();
    const retryMs = await reconcileHelmRelease(ctx, info, hr);
    lastRun.set(key, { at, generation: hr.metadata.generation ?? 1, retryMs });
  }
}
