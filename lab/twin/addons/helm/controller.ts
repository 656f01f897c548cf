// k3s's embedded helm-controller (k3s-io/helm-controller pkg/controllers/chart) for charts carried in the
// HelmChart itself (chartContent): when the HelmChart's config hash changes it "runs" helm install/upgrade —
// a new release record (the previous one superseded), the chart's objects applied — and records that on a
// Job helm-install-<name> (annotation helmcharts.helm.cattle.io/configHash, completed) and the HelmChart's
// status. The install pod itself is not run. `bootstrap: true` charts install on a cluster without a CNI;
// other charts wait until some Node is Ready (their Job pod would need the pod network). Every server runs
// this; two servers racing create the same release version and only one create succeeds.
// Deletion (k3s-io/helm-controller v0.16.17 chart.go Register: remove.RegisterScopedOnRemoveHandler
// "on-helm-chart-remove", scoped by shouldManage; pkg/remove/handler.go; rancher/wrangler v3.2.1
// pkg/generic/remove.go): a managed chart gets the finalizer wrangler.cattle.io/on-helm-chart-remove; a
// managed chart being deleted is uninstalled (helm-delete) and then loses the finalizer. An unmanaged chart
// is out of scope for both: no finalizer is added or taken off, so once it has one a delete leaves it
// Terminating until someone removes it; and its install Job goes (the generating handler applies an empty set).
import { createHash } from 'node:crypto';
import YAML from 'yaml';
import { BUILTIN } from '../../api/resources.ts';
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import { type AddonContext, nowIso } from '../context.ts';
import { renderCilium } from './cilium-chart.ts';
import { decodeRelease, releaseSecret, type ReleaseInput } from './release.ts';
import { tgzFiles } from './tgz.ts';
import { coalesce } from './values.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;
const SECRETS = info('secrets');
const JOBS = info('jobs');
const NODES = info('nodes');
const NAMESPACES = info('namespaces');
export const UNMANAGED = 'helmcharts.helm.cattle.io/unmanaged';
const CONFIG_HASH = 'helmcharts.helm.cattle.io/configHash';
/** wrangler's finalizer prefix and the remove handler's name. */
export const REMOVE_FINALIZER = 'wrangler.cattle.io/on-helm-chart-remove';

/** chart.go shouldManage: a chart with content (or a chart name) and without the unmanaged annotation. */
function shouldManage(hc: any): boolean {
  if (!hc?.spec?.chart && !hc?.spec?.chartContent) return false;
  return hc.metadata?.annotations?.[UNMANAGED] === undefined;
}

export function configHash(spec: any): string {
  const h = createHash('sha256');
  for (const k of ['chartContent', 'valuesContent', 'targetNamespace', 'version', 'set', 'repo', 'chart'])
    h.update(`${k}=${JSON.stringify(spec?.[k] ?? null)};`);
  return `SHA256=${h.digest('hex').toUpperCase()}`;
}

/** helm template, for the charts the twin knows (Cilium); others are refused by name. */
export function renderChart(
  spec: any,
  release: string,
  namespace: string,
): { meta: any; defaults: any; values: any; rendered: ReturnType<typeof renderCilium> } {
  const files = tgzFiles(Buffer.from(String(spec.chartContent).replace(/\s+/g, ''), 'base64'));
  const top = [...files.keys()][0]?.split('/')[0];
  const meta = YAML.parse(files.get(`${top}/Chart.yaml`)?.toString('utf8') ?? '{}');
  const defaults = YAML.parse(files.get(`${top}/values.yaml`)?.toString('utf8') ?? '{}') ?? {};
  // The install Job's Helm reads valuesContent as a values file, as YAML 1.1 (helm/helm v3
  // pkg/chartutil/values.go ReadValues: sigs.k8s.io/yaml, on go-yaml v2): `on`/`yes` unquoted are booleans.
  const user = YAML.parse(spec.valuesContent ?? '', { version: '1.1' }) ?? {};
  const values = coalesce(defaults, user);
  if (meta?.name !== 'cilium') throw new Error(`chart ${meta?.name ?? top}: the twin's helm-controller renders only the cilium chart`);
  return { meta, defaults, values: user, rendered: renderCilium(values, namespace, release) };
}

export class HelmController {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private ctx: AddonContext) {}

  start(intervalMs = 3000): void {
    const tick = async () => {
      try {
        await this.reconcile();
      } catch (e) {
        if (!(e instanceof ApiError)) log.error(`helm-controller: ${(e as Error).message}`);
      }
      if (!this.stopped) this.timer = setTimeout(tick, intervalMs);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  async reconcile(): Promise<void> {
    const charts = await this.ctx.registry.findKind('helm.cattle.io/v1', 'HelmChart');
    if (!charts) return;
    for (let hc of (await this.ctx.store.list(charts)).items) {
      if (!shouldManage(hc)) {
        await this.dropInstallJob(hc);
        continue;
      }
      const finalizers: string[] = hc.metadata.finalizers ?? [];
      if (hc.metadata.deletionTimestamp) {
        if (finalizers.includes(REMOVE_FINALIZER)) await this.remove(charts, hc);
        continue;
      }
      if (!finalizers.includes(REMOVE_FINALIZER)) {
        // wrangler's addFinalizer: an update of the object as it was read (a newer write wins, retried next round).
        hc = await this.ctx.store.update(
          charts,
          hc.metadata.namespace,
          hc.metadata.name,
          { ...hc, metadata: { ...hc.metadata, finalizers: [...finalizers, REMOVE_FINALIZER] } },
          { expectedRV: hc.metadata.resourceVersion, keepStatus: true },
        );
      }
      if (!hc.spec.chartContent) continue;
      const hash = configHash(hc.spec);
      const jobName = `helm-install-${hc.metadata.name}`;
      const job = await this.ctx.store.tryGet(JOBS, hc.metadata.namespace, jobName);
      if (job?.metadata?.annotations?.[CONFIG_HASH] === hash) continue;
      if (!hc.spec.bootstrap && !(await this.someNodeReady())) continue;
      await this.install(charts, hc, hash, jobName, job);
    }
  }

  /** An unmanaged chart's generating handler returns nothing: the objects it applied (the install Job) go. */
  private async dropInstallJob(hc: any): Promise<void> {
    const name = `helm-install-${hc.metadata.name}`;
    const job = await this.ctx.store.tryGet(JOBS, hc.metadata.namespace, name);
    if (!job || !(job.metadata.ownerReferences ?? []).some((o: any) => o.uid === hc.metadata.uid)) return;
    await this.ctx.store.delete(JOBS, hc.metadata.namespace, name).catch(() => undefined);
  }

  /**
   * OnRemove for a managed chart being deleted: helm uninstall (the deployed release's objects, then every
   * release record), the chart's Job removed, then the finalizer taken off, which lets the chart go.
   */
  private async remove(charts: any, hc: any): Promise<void> {
    const release = hc.metadata.name;
    const ns = hc.spec.targetNamespace || hc.metadata.namespace;
    const { store } = this.ctx;
    const history = (await store.list(SECRETS, ns)).items.filter((s) => s.metadata.labels?.owner === 'helm' && s.metadata.labels?.name === release);
    const deployed = history.find((s) => s.metadata.labels?.status === 'deployed');
    if (deployed) {
      for (const doc of YAML.parseAllDocuments(String(decodeRelease(deployed.data.release).manifest ?? ''))) {
        const o = doc.toJS();
        const i = o?.kind ? await this.ctx.registry.findKind(o.apiVersion, o.kind) : undefined;
        if (i) await store.delete(i, i.namespaced ? (o.metadata?.namespace ?? ns) : undefined, o.metadata?.name).catch(() => undefined);
      }
    }
    for (const s of history) await store.delete(SECRETS, ns, s.metadata.name).catch(() => undefined);
    await store.delete(JOBS, hc.metadata.namespace, `helm-install-${release}`).catch(() => undefined);
    await this.ctx.etcd.delete(`/twin/helm-install/${hc.metadata.namespace}/${release}`).catch(() => undefined);
    log.info(`helm-controller: Uninstalled HelmChart using Job ${hc.metadata.namespace}/helm-delete-${release}, removing resources`);
    const finalizers = (hc.metadata.finalizers ?? []).filter((f: string) => f !== REMOVE_FINALIZER);
    await store.update(
      charts,
      hc.metadata.namespace,
      hc.metadata.name,
      { ...hc, metadata: { ...hc.metadata, finalizers } },
      { expectedRV: hc.metadata.resourceVersion, keepStatus: true },
    );
  }

  private async someNodeReady(): Promise<boolean> {
    return (await this.ctx.store.list(NODES)).items.some((n) => (n.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));
  }

  private async install(charts: any, hc: any, hash: string, jobName: string, job: any): Promise<void> {
    const release = hc.metadata.name;
    const ns = hc.spec.targetNamespace || hc.metadata.namespace;
    const { store } = this.ctx;
    // One server performs each change: the first to claim this config hash in the datastore.
    const claimKey = `/twin/helm-install/${hc.metadata.namespace}/${release}`;
    const claim = await this.ctx.etcd.get(claimKey);
    if (claim?.value === hash || !(await this.ctx.etcd.putIf(claimKey, hash, claim?.modRevision ?? 0)).ok) return;
    const history = (await store.list(SECRETS, ns)).items.filter((s) => s.metadata.labels?.owner === 'helm' && s.metadata.labels?.name === release);
    const last = history.reduce((m, s) => Math.max(m, Number(s.metadata.labels?.version ?? 0)), 0);
    let outcome: { ok: true } | { ok: false; message: string };
    try {
      if (!(await store.tryGet(NAMESPACES, undefined, ns))) {
        if (!hc.spec.createNamespace) throw new Error(`create: failed to create: namespaces "${ns}" not found`);
        await store.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
      }
      const r = renderChart(hc.spec, release, ns);
      const rec: ReleaseInput = {
        name: release,
        namespace: ns,
        version: last + 1,
        status: 'deployed',
        chartMetadata: r.meta,
        chartValues: r.defaults,
        config: r.values,
        manifest: r.rendered.manifest,
        firstDeployed: nowIso(),
        description: last ? 'Upgrade complete' : 'Install complete',
      };
      // As Helm: the objects, then the record says deployed and the previous one superseded.
      for (const o of r.rendered.objects) await this.apply(o);
      await store.create(SECRETS, ns, releaseSecret(rec));
      for (const s of history.filter((x) => x.metadata.labels?.status === 'deployed')) {
        await store
          .update(SECRETS, ns, s.metadata.name, { ...s, metadata: { ...s.metadata, labels: { ...s.metadata.labels, status: 'superseded' } } })
          .catch(() => undefined);
      }
      log.info(`helm-controller: ${last ? 'upgraded' : 'installed'} ${release} in ${ns} (revision ${last + 1})`);
      outcome = { ok: true };
    } catch (e) {
      if (e instanceof ApiError && e.reason === 'AlreadyExists') return;
      outcome = { ok: false, message: (e as Error).message };
      log.error(`helm-controller: ${release}: ${outcome.message}`);
    }
    await this.recordJob(hc, hash, jobName, job, outcome);
    const status = {
      jobName,
      conditions: outcome.ok ? [] : [{ type: 'Failed', status: 'True', reason: 'Job has failed', message: outcome.message }],
    };
    await store.update(charts, hc.metadata.namespace, hc.metadata.name, { status }, { onlyStatus: true }).catch(() => undefined);
  }

  private async recordJob(hc: any, hash: string, jobName: string, job: any, outcome: { ok: boolean }): Promise<void> {
    const t = nowIso();
    const obj = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: jobName,
        namespace: hc.metadata.namespace,
        annotations: { [CONFIG_HASH]: hash },
        labels: { 'helmcharts.helm.cattle.io/chart': hc.metadata.name },
        ownerReferences: [{ apiVersion: 'helm.cattle.io/v1', kind: 'HelmChart', name: hc.metadata.name, uid: hc.metadata.uid }],
      },
      spec: {
        backoffLimit: 1000,
        template: {
          spec: {
            hostNetwork: Boolean(hc.spec.bootstrap),
            restartPolicy: 'OnFailure',
            serviceAccountName: `helm-${hc.metadata.name}`,
            containers: [
              {
                name: 'helm',
                image: 'rancher/klipper-helm:v0.9.8-build20250709',
                args: ['install'],
                env: hc.spec.bootstrap
                  ? [
                      { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
                      { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
                    ]
                  : [],
              },
            ],
          },
        },
      },
    };
    const status = outcome.ok
      ? { succeeded: 1, startTime: t, completionTime: t, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: t }] }
      : { failed: 1, startTime: t, conditions: [] };
    const { store } = this.ctx;
    if (job) await store.delete(JOBS, hc.metadata.namespace, jobName).catch(() => undefined);
    const created = await store.create(JOBS, hc.metadata.namespace, obj).catch(() => undefined);
    if (created) await store.update(JOBS, hc.metadata.namespace, jobName, { status }, { onlyStatus: true }).catch(() => undefined);
  }

  /** kubectl-apply-like: create, or replace what the chart owns and keep the status. */
  private async apply(o: any): Promise<void> {
    const i = await this.ctx.registry.findKind(o.apiVersion, o.kind);
    if (!i)
      throw new Error(
        `resource mapping not found for name: "${o.metadata.name}" namespace: "${o.metadata.namespace ?? ''}" from "": no matches for kind "${o.kind}" in version "${o.apiVersion}"`,
      );
    const ns = i.namespaced ? o.metadata.namespace : undefined;
    const cur = await this.ctx.store.tryGet(i, ns, o.metadata.name);
    if (!cur) await this.ctx.store.create(i, ns, o);
    else
      await this.ctx.store.update(
        i,
        ns,
        o.metadata.name,
        { ...o, metadata: { ...cur.metadata, labels: o.metadata.labels, annotations: o.metadata.annotations } },
        { keepStatus: true },
      );
  }
}
