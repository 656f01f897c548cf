// Flux's kustomize-controller (fluxcd/kustomize-controller internal/controller/kustomization_controller.go,
// fluxcd/pkg ssa + kustomize) for Kustomizations of a GitRepository: the source's artifact, dependsOn,
// kustomize build of spec.path, postBuild substitution (strict), a staged server-side apply with a dry
// run of everything first (CRDs and Namespaces before the rest, as ssa.ApplyAllStaged), the inventory,
// prune, and wait/healthChecks. Reasons and messages as upstream writes them; the build itself is the
// project's own kustomize subset (phases/cilium/kustomize.ts), see lab/TWIN.md.
import { posix } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kustomizeBuild } from '../../../../phases/cilium/kustomize.ts';
import type { ResourceInfo } from '../../api/resources.ts';
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import { type Condition, builtin, due, durationMs, findKind, handled, isReady, withConditions, writeStatus } from './common.ts';
import { SubstitutionError, mergeVars, substitute, substitutionDisabled } from './envsubst.ts';
import { collectKustomizations, recordKustomization } from './garbage.ts';
import { healthOf } from './health.ts';
import { readArtifact } from './source.ts';

export const KS_API = 'kustomize.toolkit.fluxcd.io/v1';
const NAME_LABEL = 'kustomize.toolkit.fluxcd.io/name';
const NS_LABEL = 'kustomize.toolkit.fluxcd.io/namespace';

/** A reconcile that stops: the Ready reason and message, as upstream. */
export class Stop extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** `Kind/namespace/name` (or `Kind/name`), as fluxcd/pkg/ssa utils.FmtUnstructured. */
export const fmtObject = (o: any) => (o.metadata?.namespace ? `${o.kind}/${o.metadata.namespace}/${o.metadata.name}` : `${o.kind}/${o.metadata?.name}`);

/** The inventory entry of an object (fluxcd/pkg/ssa ObjMetadata: namespace_name_group_kind, and the version). */
export function inventoryEntry(o: any): { id: string; v: string } {
  const [group, version] = String(o.apiVersion).includes('/') ? String(o.apiVersion).split('/') : ['', String(o.apiVersion)];
  return { id: `${o.metadata?.namespace ?? ''}_${o.metadata?.name}_${group}_${o.kind}`, v: version };
}

export function fromInventoryEntry(e: { id: string; v: string }): { apiVersion: string; kind: string; namespace?: string; name: string } {
  const [namespace, name, group, kind] = e.id.split('_');
  return { apiVersion: group ? `${group}/${e.v}` : e.v, kind, namespace: namespace || undefined, name };
}

export const dependencyNotReady = (ns: string, name: string) => `dependency '${ns}/${name}' is not ready`;
export const appliedRevision = (rev: string) => `Applied revision: ${rev}`;
export const dryRunNoMatch = (o: any) => `${fmtObject(o)} dry-run failed: no matches for kind "${o.kind}" in version "${o.apiVersion}"`;

const sameSource = (a: any, b: any) => {
  const ref = (k: any) => `${k.spec?.sourceRef?.kind}/${k.spec?.sourceRef?.namespace ?? k.metadata.namespace}/${k.spec?.sourceRef?.name}`;
  return ref(a) === ref(b);
};

/** A dependency on the same source must have applied this revision first, so tiers apply in order. */
async function checkDependencies(ctx: AddonContext, info: ResourceInfo, ks: any, revision: string): Promise<void> {
  for (const dep of ks.spec?.dependsOn ?? []) {
    const ns = dep.namespace ?? ks.metadata.namespace;
    const other = await ctx.store.tryGet(info, ns, dep.name);
    if (!other) throw new Stop('DependencyNotReady', `dependency '${ns}/${dep.name}' not found: kustomizations.kustomize.toolkit.fluxcd.io "${dep.name}" not found`);
    if (!isReady(other)) throw new Stop('DependencyNotReady', dependencyNotReady(ns, dep.name));
    if (sameSource(ks, other) && other.status?.lastAppliedRevision !== revision) throw new Stop('DependencyNotReady', `dependency '${ns}/${dep.name}' revision is not up to date`);
  }
}

/** kustomize build of the path in the artifact; a folder without kustomization.yaml gets one listing its YAML files, as Flux generates it. */
async function build(files: Record<string, string>, path: string): Promise<any[]> {
  const dir = posix.normalize(path.replace(/^\.\//, '') || '.');
  const inDir = Object.keys(files).filter((f) => dir === '.' || f.startsWith(`${dir}/`));
  if (inDir.length === 0) throw new Stop('ArtifactFailed', `kustomization path not found: stat ${path}: no such file or directory`);
  const own = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].some((n) => files[posix.join(dir, n)] !== undefined);
  const generated = own ? undefined : stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: inDir.filter((f) => /\.ya?ml$/.test(f)).map((f) => posix.relative(dir, f)) });
  const read = async (p: string) => {
    if (generated && p === posix.join(dir, 'kustomization.yaml')) return generated;
    const t = files[posix.normalize(p)];
    if (t === undefined) throw new Error(`${p}: no such file`);
    return t;
  };
  try {
    return (await kustomizeBuild(read, dir)).resources.map((r) => r.doc);
  } catch (e) {
    throw new Stop('BuildFailed', `kustomize build failed: ${(e as Error).message}`);
  }
}

async function variables(ctx: AddonContext, ks: any): Promise<Record<string, string>> {
  const sources: Record<string, string>[] = [];
  for (const ref of ks.spec?.postBuild?.substituteFrom ?? []) {
    const isSecret = ref.kind === 'Secret';
    const obj = await ctx.store.tryGet(builtin(isSecret ? 'secrets' : 'configmaps'), ks.metadata.namespace, ref.name);
    if (!obj) {
      if (ref.optional) continue;
      throw new SubstitutionError(`substitute from '${ref.kind}/${ref.name}' error: ${isSecret ? 'secrets' : 'configmaps'} "${ref.name}" not found`);
    }
    const data: Record<string, string> = isSecret
      ? Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64').toString('utf8')]))
      : { ...(obj.data ?? {}) };
    sources.push(data);
  }
  return mergeVars(sources, ks.spec?.postBuild?.substitute);
}

/** kustomize's Gvk.String() and the name, as kustomize-controller names a resource whose post build failed. */
export function resourceRef(d: any): string {
  const [group, version] = String(d.apiVersion ?? '').includes('/') ? String(d.apiVersion).split('/') : ['', String(d.apiVersion ?? '')];
  return `${d.kind || '[noKind]'}.${version || '[noVer]'}.${group || '[noGrp]'}/${d.metadata?.name}`;
}

export const postBuildFailed = (d: any, why: string) => `post build failed for '${resourceRef(d)}': ${why}`;

/** Upstream substitutes resource by resource (reading substituteFrom for each): the first resource names a failure. */
async function postBuild(ctx: AddonContext, ks: any, docs: any[]): Promise<any[]> {
  if (!ks.spec?.postBuild) return docs;
  let vars: Record<string, string>;
  try {
    vars = await variables(ctx, ks);
  } catch (e) {
    if (e instanceof SubstitutionError && docs.length) throw new Stop('BuildFailed', postBuildFailed(docs[0], e.message));
    throw e;
  }
  // With no variable at all Flux substitutes nothing: `${VAR}` stays as written.
  if (Object.keys(vars).length === 0) return docs;
  return docs.map((d) => {
    if (substitutionDisabled(d)) return d;
    try {
      return parseAllDocuments(substitute(stringify(d, { lineWidth: 0 }), vars, true))[0].toJS();
    } catch (e) {
      if (e instanceof SubstitutionError) throw new Stop('BuildFailed', postBuildFailed(d, `envsubst error: ${e.message}`));
      throw e;
    }
  });
}

const STAGE_ONE = new Set(['CustomResourceDefinition', 'Namespace']);

function labelled(o: any, ks: any): any {
  return { ...o, metadata: { ...o.metadata, labels: { ...(o.metadata?.labels ?? {}), [NAME_LABEL]: ks.metadata.name, [NS_LABEL]: ks.metadata.namespace } } };
}

/** Create, or update what the manifest says and keep the rest (status, other labels) — skipped when nothing changes. */
async function applyOne(ctx: AddonContext, info: ResourceInfo, o: any): Promise<void> {
  const ns = info.namespaced ? o.metadata.namespace ?? 'default' : undefined;
  const cur = await ctx.store.tryGet(info, ns, o.metadata.name);
  if (!cur) {
    await ctx.store.create(info, ns, structuredClone(o));
    return;
  }
  const next = { ...cur, ...o, metadata: { ...cur.metadata, labels: { ...(cur.metadata.labels ?? {}), ...(o.metadata.labels ?? {}) }, annotations: { ...(cur.metadata.annotations ?? {}), ...(o.metadata.annotations ?? {}) } }, status: cur.status };
  if (JSON.stringify(next) === JSON.stringify(cur)) return;
  await ctx.store.update(info, ns, o.metadata.name, next, { keepStatus: true });
}

/** ssa.ApplyAllStaged: CRDs and Namespaces first; then a dry run of every other object (all or nothing), then those. */
async function applyAll(ctx: AddonContext, docs: any[]): Promise<void> {
  const first = docs.filter((d) => STAGE_ONE.has(d.kind));
  const rest = docs.filter((d) => !STAGE_ONE.has(d.kind));
  for (const o of first) await applyOne(ctx, (await findKind(ctx, o.apiVersion, o.kind))!, o);
  if (first.some((d) => d.kind === 'CustomResourceDefinition')) ctx.registry.invalidate();
  const infos: ResourceInfo[] = [];
  for (const o of rest) {
    const info = await findKind(ctx, o.apiVersion, o.kind);
    if (!info) throw new Stop('ReconciliationFailed', dryRunNoMatch(o));
    const ns = o.metadata?.namespace ?? 'default';
    // ssa's DryRunErr for a NotFound: "<obj> not found: <api error>".
    if (info.namespaced && !(await ctx.store.tryGet(builtin('namespaces'), undefined, ns))) throw new Stop('ReconciliationFailed', `${fmtObject(o)} not found: namespaces "${ns}" not found`);
    infos.push(info);
  }
  for (let i = 0; i < rest.length; i++) {
    try {
      await applyOne(ctx, infos[i], rest[i]);
    } catch (e) {
      // What the API refuses (an invalid object) upstream's dry run would have named.
      if (e instanceof ApiError) throw new Stop('ReconciliationFailed', `${fmtObject(rest[i])} dry-run failed${e.reason ? ` (${e.reason})` : ''}: ${e.message}`);
      throw e;
    }
  }
}

async function prune(ctx: AddonContext, old: { id: string; v: string }[], now: { id: string; v: string }[]): Promise<void> {
  const keep = new Set(now.map((e) => e.id));
  for (const e of old.filter((x) => !keep.has(x.id))) {
    const m = fromInventoryEntry(e);
    const info = await findKind(ctx, m.apiVersion, m.kind);
    if (!info) continue;
    const cur = await ctx.store.tryGet(info, m.namespace, m.name);
    if (!cur || cur.metadata?.annotations?.['kustomize.toolkit.fluxcd.io/prune'] === 'disabled') continue;
    await ctx.store.delete(info, m.namespace, m.name).catch(() => undefined);
    log.info(`kustomize-controller: pruned ${fmtObject({ kind: m.kind, metadata: { namespace: m.namespace, name: m.name } })}`);
  }
}

/** The objects to wait for: every applied one with spec.wait, else spec.healthChecks. */
function healthTargets(ks: any, applied: any[]): { apiVersion: string; kind: string; namespace?: string; name: string }[] {
  if (ks.spec?.wait) return applied.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name }));
  return (ks.spec?.healthChecks ?? []).map((h: any) => ({ apiVersion: h.apiVersion ?? 'v1', kind: h.kind, namespace: h.namespace, name: h.name }));
}

/** Ready carries the wrapped error ("health check failed after …: …"), Healthy the wait's own. */
class HealthFailed extends Stop {
  constructor(readonly healthy: string, ready: string) {
    super('HealthCheckFailed', ready);
  }
}

/** The twin waits at most this long in one reconcile, whatever spec.timeout says (it keeps one loop). */
const TWIN_HEALTH_CAP_MS = 20_000;

async function waitHealthy(ctx: AddonContext, ks: any, targets: ReturnType<typeof healthTargets>): Promise<number> {
  const t0 = Date.now();
  const timeout = Math.min(TWIN_HEALTH_CAP_MS, durationMs(ks.spec?.timeout, durationMs(ks.spec?.interval, TWIN_HEALTH_CAP_MS)));
  for (;;) {
    const pending: string[] = [];
    for (const t of targets) {
      const s = await healthOf(ctx, t);
      if (s !== 'Current') pending.push(`${fmtObject({ kind: t.kind, metadata: { namespace: t.namespace, name: t.name } })} status: '${s}'`);
    }
    if (pending.length === 0) return Date.now() - t0;
    if (Date.now() - t0 >= timeout) throw new HealthFailed(`timeout waiting for: [${pending.join(', ')}]`, `health check failed after ${(Date.now() - t0) / 1000}s: timeout waiting for: [${pending.join(', ')}]`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function reconcileKustomization(ctx: AddonContext, info: ResourceInfo, ks: any): Promise<void> {
  const gen = ks.metadata.generation ?? 1;
  const waits = Boolean(ks.spec?.wait) || (ks.spec?.healthChecks ?? []).length > 0;
  let revision: string | undefined = ks.status?.lastAttemptedRevision;
  // Upstream records the inventory right after the apply, before the health checks.
  let applied: { id: string; v: string }[] | undefined;
  try {
    const ref = ks.spec?.sourceRef ?? {};
    const srcNs = ref.namespace ?? ks.metadata.namespace;
    const srcInfo = await findKind(ctx, 'source.toolkit.fluxcd.io/v1', ref.kind ?? 'GitRepository');
    const src = srcInfo ? await ctx.store.tryGet(srcInfo, srcNs, ref.name) : undefined;
    if (!src) throw new Stop('ArtifactFailed', `Source '${ref.kind}/${srcNs}/${ref.name}' not found`);
    const stored = await readArtifact(ctx, ref.kind ?? 'GitRepository', srcNs, ref.name);
    if (!stored || !src.status?.artifact) throw new Stop('ArtifactFailed', 'Source artifact not found, retrying in 30s');
    revision = stored.artifact.revision;
    await checkDependencies(ctx, info, ks, revision);
    const docs = await postBuild(ctx, ks, await build(stored.files, ks.spec?.path ?? './'));
    const objects = docs.map((d) => labelled(d, ks));
    await applyAll(ctx, objects);
    const entries = objects.map(inventoryEntry);
    applied = entries;
    if (ks.spec?.prune) await prune(ctx, ks.status?.inventory?.entries ?? [], entries);
    await recordKustomization(ctx, ks.metadata.namespace, ks.metadata.name, { prune: Boolean(ks.spec?.prune), deletionPolicy: ks.spec?.deletionPolicy, entries });
    const conds: Condition[] = [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: appliedRevision(revision), observedGeneration: gen }];
    if (waits) {
      const took = await waitHealthy(ctx, ks, healthTargets(ks, objects));
      conds.push({ type: 'Healthy', status: 'True', reason: 'Succeeded', message: `Health check passed in ${took / 1000}s`, observedGeneration: gen });
    }
    const status = { ...handled(ks), conditions: withConditions(ks.status?.conditions, conds, ['Reconciling', 'Stalled']), inventory: { entries }, lastAppliedRevision: revision, lastAttemptedRevision: revision };
    await writeStatus(ctx, info, ks, status);
  } catch (e) {
    if (!(e instanceof Stop)) throw e;
    const conds: Condition[] = [{ type: 'Ready', status: 'False', reason: e.reason, message: e.message, observedGeneration: gen }];
    if (e instanceof HealthFailed) conds.push({ type: 'Healthy', status: 'False', reason: 'HealthCheckFailed', message: e.healthy, observedGeneration: gen });
    const status = { ...(ks.status ?? {}), ...handled(ks), conditions: withConditions(ks.status?.conditions, conds, ['Reconciling']), ...(revision ? { lastAttemptedRevision: revision } : {}), ...(applied ? { inventory: { entries: applied } } : {}) };
    await writeStatus(ctx, info, ks, status);
  }
}

/** One round: every Kustomization that is due (not suspended). */
export async function kustomizeRound(ctx: AddonContext, lastRun: Map<string, number>): Promise<void> {
  const info = await findKind(ctx, KS_API, 'Kustomization');
  if (!info) return;
  await collectKustomizations(ctx, info, fromInventoryEntry);
  for (const ks of (await ctx.store.list(info)).items) {
    if (ks.spec?.suspend) continue;
    const key = `${ks.metadata.namespace}/${ks.metadata.name}`;
    const src = ks.status?.lastAttemptedRevision;
    const stored = await readArtifact(ctx, ks.spec?.sourceRef?.kind ?? 'GitRepository', ks.spec?.sourceRef?.namespace ?? ks.metadata.namespace, ks.spec?.sourceRef?.name);
    // A new source revision is an event upstream (the source's watch), not a wait for the interval.
    const moved = stored !== undefined && stored.artifact.revision !== src;
    if (!moved && !due(ks, lastRun.get(key))) continue;
    lastRun.set(key, Date.now());
    await reconcileKustomization(ctx, info, ks);
  }
}
