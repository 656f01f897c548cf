// The DaemonSet controller's history (kubernetes/kubernetes @7e74f25f pkg/controller/daemon/update.go
// constructHistory, snapshot, cleanupHistory): one ControllerRevision `<ds>-<hash>` per pod template,
// labelled with the template's labels and `controller-revision-hash`, owned by the DaemonSet, its data the
// template as a `$patch: replace` patch. The one matching the current template is bumped to the highest
// revision (a template changed back makes its old revision current again); old ones beyond
// spec.revisionHistoryLimit (default 10) go, except those live pods still carry. `kubectl rollout status`
// and the engine's rollout gate read the current one's hash.
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';
import type { KubeStore } from './context.ts';

const REVISIONS = BUILTIN.find((x) => x.resource === 'controllerrevisions')!;

const ownedBy = (o: any, ds: any) => (o.metadata?.ownerReferences ?? []).some((r: any) => r.uid === ds.metadata.uid);

export async function constructHistory(store: KubeStore, ds: any, hash: string, podHashes: Set<string>): Promise<void> {
  const ns = ds.metadata.namespace;
  const owned = (await store.list(REVISIONS, ns)).items.filter((r) => ownedBy(r, ds));
  const cur = owned.find((r) => r.metadata?.labels?.['controller-revision-hash'] === hash);
  const old = owned.filter((r) => r !== cur);
  const next = old.reduce((m, r) => Math.max(m, r.revision ?? 0), 0) + 1;
  try {
    if (!cur) {
      await store.create(REVISIONS, ns, {
        apiVersion: 'apps/v1',
        kind: 'ControllerRevision',
        metadata: {
          name: `${ds.metadata.name}-${hash}`,
          namespace: ns,
          labels: { ...(ds.spec?.template?.metadata?.labels ?? {}), 'controller-revision-hash': hash },
          annotations: ds.metadata.annotations ?? {},
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'DaemonSet', name: ds.metadata.name, uid: ds.metadata.uid, controller: true, blockOwnerDeletion: true },
          ],
        },
        data: { spec: { template: { ...(ds.spec?.template ?? {}), $patch: 'replace' } } },
        revision: next,
      });
    } else if ((cur.revision ?? 0) < next) {
      await store.update(REVISIONS, ns, cur.metadata.name, { ...cur, revision: next }, { expectedRV: cur.metadata.resourceVersion });
    }
  } catch (e) {
    // Another server wrote first: the next round sees its revision.
    if (!(e instanceof ApiError && (e.reason === 'AlreadyExists' || e.reason === 'Conflict'))) throw e;
  }
  const limit = ds.spec?.revisionHistoryLimit ?? 10;
  let toKill = old.length - limit;
  for (const r of [...old].sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0))) {
    if (toKill <= 0) break;
    if (podHashes.has(r.metadata?.labels?.['controller-revision-hash'])) continue;
    await store.delete(REVISIONS, ns, r.metadata.name).catch(() => undefined);
    toKill--;
  }
}

/** The garbage collector's part: revisions whose DaemonSet is gone go too. */
export async function collectRevisions(store: KubeStore, liveDaemonSets: Set<string>): Promise<void> {
  for (const r of (await store.list(REVISIONS)).items) {
    const owner = (r.metadata?.ownerReferences ?? []).find((o: any) => o.kind === 'DaemonSet');
    if (owner && !liveDaemonSets.has(owner.uid)) await store.delete(REVISIONS, r.metadata.namespace, r.metadata.name).catch(() => undefined);
  }
}
