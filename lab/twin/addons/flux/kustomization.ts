// Flux's kustomize-controller (fluxcd/kustomize-controller internal/controller/kustomization_controller.go,
// fluxcd/pkg ssa + kustomize) for Kustomizations of a GitRepository: the source's artifact, dependsOn,
// kustomize build of spec.path, postBuild substitution (strict), a staged server-side apply with a dry
// run of everything first (CRDs and Namespaces before the rest, as ssa.ApplyAllStaged), the inventory,
// prune, and wait/healthChecks. Reasons and messages as upstream writes them; the build itself is the
// project's own kustomize subset (src/gitops/kustomize.ts), see lab/TWIN.md.
import { posix } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kustomizeBuild } from '../../../../src/gitops/kustomize.ts';
import type { ResourceInfo } from '../../api/resources.ts';
import { ApiError } from '../../api/status.ts';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import {
  type Attempt,
  type Condition,
  DEPENDENCY_REQUEUE_MS,
  builtin,
  due,
  durationMs,
  findKind,
  goDuration,
  handled,
  intervalRequeue,
  isReady,
  observed,
  withConditions,
  writeStatus,
} from './common.ts';
import { SubstitutionError, mergeVars, substitute, substitutionDisabled } from './envsubst.ts';
import { collectKustomizations, recordKustomization } from './garbage.ts';
import { healthOf } from './health.ts';
import { readArtifact } from './source.ts';

const KS_API = 'kustomize.toolkit.fluxcd.io/v1';
const NAME_LABEL = 'kustomize.toolkit.fluxcd.io/name';
const NS_LABEL = 'kustomize.toolkit.fluxcd.io/namespace';

/** A reconcile that stops: the Ready reason and message, as upstream. */
class Stop extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** `Kind/namespace/name` (or `Kind/name`), as fluxcd/pkg/ssa utils.FmtUnstructured. */
const fmtObject = (o: any) => (o.metadata?.namespace ? `${o.kind}/${o.metadata.namespace}/${o.metadata.name}` : `${o.kind}/${o.metadata?.name}`);

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
    if (!other)
      throw new Stop('DependencyNotReady', `dependency '${ns}/${dep.name}' not found: kustomizations.kustomize.toolkit.fluxcd.io "${dep.name}" not found`);
    if (!isReady(other)) throw new Stop('DependencyNotReady', dependencyNotReady(ns, dep.name));
    if (sameSource(ks, other) && other.status?.lastAppliedRevision !== revision)
      throw new Stop('DependencyNotReady', `dependency '${ns}/${dep.name}' revision is not up to date`);
  }
}

const pathDir = (path: string) => posix.normalize(path.replace(/^\.\//, '') || '.');
const filesIn = (files: Record<string, string>, dir: string) => Object.keys(files).filter((f) => dir === '.' || f.startsWith(`${dir}/`));

/** The path must exist in the artifact (upstream: os.Stat of it, before lastAttemptedRevision is set). */
function checkPath(files: Record<string, string>, path: string): void {
  if (filesIn(files, pathDir(path)).length === 0) throw new Stop('ArtifactFailed', `kustomization path not found: stat ${path}: no such file or directory`);
}

/** kustomize build of the path in the artifact; a folder without kustomization.yaml gets one listing its YAML files, as Flux generates it. */
async function build(files: Record<string, string>, path: string): Promise<any[]> {
  const dir = pathDir(path);
  const inDir = filesIn(files, dir);
  const own = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].some((n) => files[posix.join(dir, n)] !== undefined);
  const generated = own
    ? undefined
    : stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: inDir.filter((f) => /\.ya?ml$/.test(f)).map((f) => posix.relative(dir, f)),
      });
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
function resourceRef(d: any): string {
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
  const ns = info.namespaced ? (o.metadata.namespace ?? 'default') : undefined;
  const cur = await ctx.store.tryGet(info, ns, o.metadata.name);
  if (!cur) {
    await ctx.store.create(info, ns, structuredClone(o));
    return;
  }
  const next = {
    ...cur,
    ...o,
    metadata: {
      ...cur.metadata,
      labels: { ...(cur.metadata.labels ?? {}), ...(o.metadata.labels ?? {}) },
      annotations: { ...(cur.metadata.annotations ?? {}), ...(o.metadata.annotations ?? {}) },
    },
    status: cur.status,
  };
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
    if (info.namespaced && !(await ctx.store.tryGet(builtin('namespaces'), undefined, ns)))
      throw new Stop('ReconciliationFailed', `${fmtObject(o)} not found: namespaces "${ns}" not found`);
    infos.push(info);
  }
  for (let i = 0; i < rest.length; i++) {
    try {
      await applyOne(ctx, infos[i], rest[i]);
    } catch (e) {
      // What the API refuses (an invalid object) upstream's dry run would have named.
      if (e instanceof ApiError)
        throw new Stop('ReconciliationFailed', `${fmtObject(rest[i])} dry-run failed${e.reason ? ` (${e.reason})` : ''}: ${e.message}`);
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
function healthTargets(ks: any, applied: any[]): HealthTarget[] {
  if (ks.spec?.wait) return applied.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name }));
  return (ks.spec?.healthChecks ?? []).map((h: any) => ({ apiVersion: h.apiVersion ?? 'v1', kind: h.kind, namespace: h.namespace, name: h.name }));
}

type HealthTarget = { apiVersion: string; kind: string; namespace?: string; name: string };

/** A health check under way: the twin polls it round by round instead of blocking its controller. */
interface HealthWait {
  /** The object as the attempt read it: its end records that generation and reconcile request. */
  object: any;
  start: number;
  timeoutMs: number;
  nextPoll: number;
  targets: HealthTarget[];
  revision: string;
  progress: string;
  entries: { id: string; v: string }[];
}

/** The controller's memory of an object: its last attempt and, while one runs, the health check. */
export interface KsAttempt extends Attempt {
  health?: HealthWait;
}

/** kustomize-controller's WaitForSet polls every 5 s (checkHealth: `Interval: 5 * time.Second`). */
const HEALTH_POLL_MS = 5_000;

/** Kustomization.GetTimeout(): spec.timeout, else the interval less 30 s; never under 30 s. */
export function kustomizationTimeoutMs(ks: any): number {
  const t = ks.spec?.timeout !== undefined ? durationMs(ks.spec.timeout, 0) : durationMs(ks.spec?.interval, 600_000) - 30_000;
  return Math.max(30_000, t);
}

/** Kustomization.GetRetryInterval(): spec.retryInterval, else the interval (shortened in the twin). */
const retryRequeue = (ks: any) => intervalRequeue(ks.spec?.retryInterval ?? ks.spec?.interval);

/** A Stop whose requeue is `--requeue-dependency` (30 s), not the retry interval. */
const DEPENDENCY_STOPS = (e: Stop) => e.reason === 'DependencyNotReady' || e.message.startsWith('Source artifact not found');

const pluralOf = (kind: string) => `${kind.toLowerCase().replace(/y$/, 'ie')}s`;

async function reconcileKustomization(ctx: AddonContext, info: ResourceInfo, ks: any): Promise<KsAttempt> {
  const gen = ks.metadata.generation ?? 1;
  const timeout = goDuration(kustomizationTimeoutMs(ks));
  const attempt = (retryMs: number, revision?: string, health?: HealthWait): KsAttempt => ({ at: Date.now(), generation: gen, retryMs, revision, health });
  // Upstream records lastAttemptedRevision only once the path exists, and the inventory right after the
  // apply (before the health checks).
  let attempted: string | undefined = ks.status?.lastAttemptedRevision;
  let revision: string | undefined;
  let progress: string | undefined;
  let applied: { id: string; v: string }[] | undefined;
  try {
    const ref = ks.spec?.sourceRef ?? {};
    const srcNs = ref.namespace ?? ks.metadata.namespace;
    const srcInfo = await findKind(ctx, 'source.toolkit.fluxcd.io/v1', ref.kind ?? 'GitRepository');
    const src = srcInfo ? await ctx.store.tryGet(srcInfo, srcNs, ref.name) : undefined;
    // The condition carries the API's NotFound; `Source '…' not found` is only upstream's log line.
    if (!src) throw new Stop('ArtifactFailed', `${pluralOf(ref.kind ?? 'GitRepository')}.source.toolkit.fluxcd.io "${ref.name}" not found`);
    const stored = await readArtifact(ctx, ref.kind ?? 'GitRepository', srcNs, ref.name);
    if (!stored || !src.status?.artifact) throw new Stop('ArtifactFailed', 'Source artifact not found, retrying in 30s');
    revision = stored.artifact.revision;
    await checkDependencies(ctx, info, ks, revision);
    progress = `Fetching manifests for revision ${revision} with a timeout of ${timeout}`;
    checkPath(stored.files, ks.spec?.path ?? './');
    attempted = revision;
    progress = `Building manifests for revision ${revision} with a timeout of ${timeout}`;
    const docs = await postBuild(ctx, ks, await build(stored.files, ks.spec?.path ?? './'));
    const objects = docs.map((d) => labelled(d, ks));
    progress = `Detecting drift for revision ${revision} with a timeout of ${timeout}`;
    await applyAll(ctx, objects);
    const entries = objects.map(inventoryEntry);
    applied = entries;
    if (ks.spec?.prune) await prune(ctx, ks.status?.inventory?.entries ?? [], entries);
    await recordKustomization(ctx, ks.metadata.namespace, ks.metadata.name, {
      prune: Boolean(ks.spec?.prune),
      deletionPolicy: ks.spec?.deletionPolicy,
      entries,
    });
    const targets = healthTargets(ks, objects).filter(
      (t) => !(t.kind === 'Kustomization' && t.name === ks.metadata.name && t.namespace === ks.metadata.namespace),
    );
    if (targets.length) {
      // checkHealth: Reconciling and Healthy say the checks run, Ready stays Unknown until they end.
      const running = `Running health checks for revision ${revision} with a timeout of ${timeout}`;
      const conditions = withConditions(ks.status?.conditions, [
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress', observedGeneration: gen },
        { type: 'Reconciling', status: 'True', reason: 'Progressing', message: running, observedGeneration: gen },
        { type: 'Healthy', status: 'Unknown', reason: 'Progressing', message: running, observedGeneration: gen },
      ]);
      await writeStatus(ctx, info, ks, { ...(ks.status ?? {}), ...handled(ks), conditions, inventory: { entries }, lastAttemptedRevision: revision });
      const now = Date.now();
      return attempt(retryRequeue(ks), revision, {
        object: ks,
        start: now,
        timeoutMs: kustomizationTimeoutMs(ks),
        nextPoll: now,
        targets,
        revision,
        progress: running,
        entries,
      });
    }
    await succeed(ctx, info, ks, revision, entries, undefined);
    return attempt(intervalRequeue(ks.spec?.interval), revision);
  } catch (e) {
    if (!(e instanceof Stop)) throw e;
    await fail(ctx, info, ks, e, { progress, attempted, applied });
    return attempt(DEPENDENCY_STOPS(e) ? DEPENDENCY_REQUEUE_MS : retryRequeue(ks), revision);
  }
}

/** Ready=True "Applied revision: …" (Healthy True after checks), observedGeneration, Reconciling gone. */
async function succeed(
  ctx: AddonContext,
  info: ResourceInfo,
  ks: any,
  revision: string,
  entries: { id: string; v: string }[],
  healthyIn: number | undefined,
): Promise<void> {
  const gen = ks.metadata.generation ?? 1;
  const conds: Condition[] = [
    { type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: appliedRevision(revision), observedGeneration: gen },
  ];
  if (healthyIn !== undefined)
    conds.push({ type: 'Healthy', status: 'True', reason: 'Succeeded', message: `Health check passed in ${goDuration(healthyIn)}`, observedGeneration: gen });
  const remove = ['Reconciling', 'Stalled', ...(healthyIn === undefined ? ['Healthy'] : [])];
  const status = {
    ...handled(ks),
    ...observed(ks),
    conditions: withConditions(ks.status?.conditions, conds, remove),
    inventory: { entries },
    lastAppliedRevision: revision,
    lastAttemptedRevision: revision,
  };
  await writeStatus(ctx, info, ks, status);
}

/**
 * Ready=False with the Stop's reason; observedGeneration stays where it was (finalizeStatus sets it only
 * on Ready=True), Reconciling (when the attempt got that far) turns ProgressingWithRetry.
 */
async function fail(
  ctx: AddonContext,
  info: ResourceInfo,
  ks: any,
  e: Stop,
  at: { progress?: string; attempted?: string; applied?: { id: string; v: string }[] },
): Promise<void> {
  const gen = ks.metadata.generation ?? 1;
  const conds: Condition[] = [{ type: 'Ready', status: 'False', reason: e.reason, message: e.message, observedGeneration: gen }];
  if (e instanceof HealthFailed) conds.push({ type: 'Healthy', status: 'False', reason: 'HealthCheckFailed', message: e.healthy, observedGeneration: gen });
  const before = (ks.status?.conditions ?? []).find((c: Condition) => c.type === 'Reconciling');
  const message = at.progress ?? before?.message;
  if (message !== undefined) conds.push({ type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message, observedGeneration: gen });
  const status = {
    ...(ks.status ?? {}),
    ...handled(ks),
    conditions: withConditions(ks.status?.conditions, conds),
    ...(at.attempted ? { lastAttemptedRevision: at.attempted } : {}),
    ...(at.applied ? { inventory: { entries: at.applied } } : {}),
  };
  await writeStatus(ctx, info, ks, status);
}

/** Ready carries the wrapped error ("health check failed after …: …"), Healthy the wait's own. */
class HealthFailed extends Stop {
  constructor(
    readonly healthy: string,
    ready: string,
  ) {
    super('HealthCheckFailed', ready);
  }
}

/** One poll of a running health check: the next attempt record (the check still running, or ended). */
async function pollHealth(ctx: AddonContext, info: ResourceInfo, ks: any, last: KsAttempt, h: HealthWait): Promise<KsAttempt> {
  const now = Date.now();
  if (now < h.nextPoll) return last;
  const pending: string[] = [];
  for (const t of h.targets) {
    const s = await healthOf(ctx, t);
    if (s !== 'Current') pending.push(`${fmtObject({ kind: t.kind, metadata: { namespace: t.namespace, name: t.name } })} status: '${s}'`);
  }
  const took = Date.now() - h.start;
  const done = { at: Date.now(), generation: last.generation, revision: last.revision };
  // The status of the attempt that started the checks (its generation and request), over the live status.
  const started = { ...h.object, status: ks.status };
  if (pending.length === 0) {
    await succeed(ctx, info, started, h.revision, h.entries, took);
    return { ...done, retryMs: intervalRequeue(started.spec?.interval) };
  }
  if (took >= h.timeoutMs) {
    const wait = `timeout waiting for: [${pending.join(', ')}]`;
    await fail(ctx, info, started, new HealthFailed(wait, `health check failed after ${goDuration(took)}: ${wait}`), {
      progress: h.progress,
      attempted: h.revision,
      applied: h.entries,
    });
    return { ...done, retryMs: retryRequeue(started) };
  }
  return { ...last, health: { ...h, nextPoll: now + HEALTH_POLL_MS } };
}

/** One round: every Kustomization that is due (not suspended), and the health checks under way. */
export async function kustomizeRound(ctx: AddonContext, lastRun: Map<string, KsAttempt>): Promise<void> {
  const info = await findKind(ctx, KS_API, 'Kustomization');
  if (!info) return;
  await collectKustomizations(ctx, info, fromInventoryEntry);
  for (const ks of (await ctx.store.list(info)).items) {
    if (ks.spec?.suspend) continue;
    const key = `${ks.metadata.namespace}/${ks.metadata.name}`;
    const last = lastRun.get(key);
    const stored = await readArtifact(
      ctx,
      ks.spec?.sourceRef?.kind ?? 'GitRepository',
      ks.spec?.sourceRef?.namespace ?? ks.metadata.namespace,
      ks.spec?.sourceRef?.name,
    );
    // A new source revision is an event upstream (the source's watch), not a wait for the requeue.
    const moved = stored !== undefined && last !== undefined && stored.artifact.revision !== last.revision;
    const event = moved || (last !== undefined && due(ks, { ...last, retryMs: Infinity }));
    // A running health check goes on to its end whatever happens meanwhile (CancelHealthCheckOnNewRevision
    // is off by default); a new generation, request or revision is reconciled after it.
    if (last?.health) {
      lastRun.set(key, await pollHealth(ctx, info, ks, last, last.health));
      continue;
    }
    if (!event && !due(ks, last)) continue;
    lastRun.set(key, await reconcileKustomization(ctx, info, ks));
  }
}
