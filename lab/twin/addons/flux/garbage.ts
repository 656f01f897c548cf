// What Flux's finalizers do when a Kustomization or a HelmRelease is deleted, without finalizers (the
// k3s twin deletes at once): each reconcile records what the object owns in etcd, and a later round that
// finds the object gone acts on the record.
//   kustomize-controller finalize(): with prune (deletionPolicy MirrorPrune, the default) or deletionPolicy
//     Delete, every object of the last inventory is deleted; Orphan (or prune false) leaves them.
//   helm-controller finalize → uninstall: the release's objects and its release records are deleted.
import { parseAllDocuments } from 'yaml';
import { log } from '../../log.ts';
import type { AddonContext } from '../context.ts';
import { decodeRelease } from '../helm/release.ts';
import { builtin, findKind } from './common.ts';

const KS_RECORDS = '/twin/flux/owned/kustomizations/';
const HR_RECORDS = '/twin/flux/owned/helmreleases/';

export interface KustomizationRecord {
  prune: boolean;
  deletionPolicy?: string;
  entries: { id: string; v: string }[];
}

export interface HelmReleaseRecord {
  release: string;
  storageNamespace: string;
}

export async function recordKustomization(ctx: AddonContext, ns: string, name: string, rec: KustomizationRecord): Promise<void> {
  await ctx.etcd.put(`${KS_RECORDS}${ns}/${name}`, JSON.stringify(rec));
}

export async function recordHelmRelease(ctx: AddonContext, ns: string, name: string, rec: HelmReleaseRecord): Promise<void> {
  await ctx.etcd.put(`${HR_RECORDS}${ns}/${name}`, JSON.stringify(rec));
}

/** Whether a deleted Kustomization's objects go with it. */
export function deletesObjects(rec: KustomizationRecord): boolean {
  if (rec.deletionPolicy === 'Delete') return true;
  if (rec.deletionPolicy === 'Orphan') return false;
  return rec.prune;
}

async function deleteObject(ctx: AddonContext, apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<void> {
  const info = await findKind(ctx, apiVersion, kind);
  if (!info) return;
  const cur = await ctx.store.tryGet(info, info.namespaced ? namespace : undefined, name);
  if (!cur || cur.metadata?.annotations?.['kustomize.toolkit.fluxcd.io/prune'] === 'disabled') return;
  await ctx.store.delete(info, info.namespaced ? namespace : undefined, name).catch(() => undefined);
}

/** Kustomizations deleted since their last reconcile: their objects are deleted as upstream's finalizer does. */
export async function collectKustomizations(
  ctx: AddonContext,
  info: any,
  fromEntry: (e: { id: string; v: string }) => { apiVersion: string; kind: string; namespace?: string; name: string },
): Promise<void> {
  for (const kv of (await ctx.etcd.list(KS_RECORDS)).kvs) {
    const [ns, name] = kv.key.slice(KS_RECORDS.length).split('/');
    if (await ctx.store.tryGet(info, ns, name)) continue;
    const rec = JSON.parse(kv.value) as KustomizationRecord;
    if (deletesObjects(rec)) {
      for (const e of rec.entries) {
        const m = fromEntry(e);
        await deleteObject(ctx, m.apiVersion, m.kind, m.namespace, m.name);
      }
      log.info(`kustomize-controller: Kustomization ${ns}/${name} deleted, ${rec.entries.length} objects garbage collected`);
    }
    await ctx.etcd.delete(kv.key);
  }
}

/** HelmReleases deleted since their last reconcile: their release is uninstalled (objects, then records). */
export async function collectHelmReleases(ctx: AddonContext, info: any): Promise<void> {
  const secrets = builtin('secrets');
  for (const kv of (await ctx.etcd.list(HR_RECORDS)).kvs) {
    const [ns, name] = kv.key.slice(HR_RECORDS.length).split('/');
    if (await ctx.store.tryGet(info, ns, name)) continue;
    const rec = JSON.parse(kv.value) as HelmReleaseRecord;
    const history = (await ctx.store.list(secrets, rec.storageNamespace)).items.filter(
      (s) => s.metadata.labels?.owner === 'helm' && s.metadata.labels?.name === rec.release,
    );
    const deployed = history.find((s) => s.metadata.labels?.status === 'deployed');
    if (deployed) {
      const manifest = String(decodeRelease(deployed.data.release).manifest ?? '');
      for (const doc of parseAllDocuments(manifest)) {
        const o = doc.toJS();
        if (o?.kind) await deleteObject(ctx, o.apiVersion, o.kind, o.metadata?.namespace, o.metadata?.name);
      }
    }
    for (const s of history) await ctx.store.delete(secrets, rec.storageNamespace, s.metadata.name).catch(() => undefined);
    log.info(`helm-controller (Flux): HelmRelease ${ns}/${name} deleted, release ${rec.storageNamespace}/${rec.release} uninstalled`);
    await ctx.etcd.delete(kv.key);
  }
}
