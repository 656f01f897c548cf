// metadata.finalizers and deletionTimestamp as kube-apiserver's generic registry handles them
// (kubernetes/apiserver v0.33.5 pkg/registry/generic/registry/store.go: Delete,
// updateForGracefulDeletionAndFinalizers, markAsDeleting, ShouldDeleteDuringUpdate; pkg/registry/rest/
// update.go BeforeUpdate; kubernetes/apimachinery v0.33.5 pkg/api/validation/objectmeta.go
// ValidateNoNewFinalizers). A delete of an object with finalizers only marks it (deletionTimestamp now,
// deletionGracePeriodSeconds 0, generation + 1) and it stays, Terminating, until an update or patch leaves
// no finalizer: that write deletes it. While it is marked, no update can move the mark or add a finalizer.
// Pure.
import { invalid } from './status.ts';

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export const finalizersOf = (obj: any): string[] => obj?.metadata?.finalizers ?? [];

/** Marked for deletion and held by a finalizer: what a DELETE leaves behind. */
export const pendingDeletion = (obj: any): boolean => Boolean(obj?.metadata?.deletionTimestamp) && finalizersOf(obj).length > 0;

/** markAsDeleting: the mark a DELETE puts on an object that has finalizers. */
export function markDeleting(obj: any, at = now()): any {
  const m = { ...(obj.metadata ?? {}) };
  if (!m.deletionTimestamp && (m.generation ?? 0) > 0) m.generation += 1;
  m.deletionTimestamp ??= at;
  m.deletionGracePeriodSeconds = 0;
  return { ...obj, metadata: m };
}

/** BeforeCreate: a new object carries no deletion mark. */
export function clearDeletion(meta: any): void {
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
}

/** BeforeUpdate and ValidateObjectMetaUpdate: the old mark stays; a marked object takes no new finalizer. */
export function carryDeletion(next: any, old: any, qualifiedKind: string, name: string): void {
  const m = next.metadata;
  const o = old.metadata ?? {};
  if (!o.deletionTimestamp) {
    clearDeletion(m);
    return;
  }
  m.deletionTimestamp = o.deletionTimestamp;
  m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds;
  const added = [...new Set(finalizersOf(next).filter((f) => !finalizersOf(old).includes(f)))].sort();
  if (added.length) {
    throw invalid(
      qualifiedKind,
      name,
      `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
    );
  }
}

/** ShouldDeleteDuringUpdate: a marked object whose last finalizer this write removes goes now. */
export function deleteOnUpdate(next: any): boolean {
  const m = next.metadata ?? {};
  return Boolean(m.deletionTimestamp) && finalizersOf(next).length === 0 && !m.deletionGracePeriodSeconds;
}
