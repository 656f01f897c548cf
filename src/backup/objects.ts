// The object inventory of a cluster: every listable API object as kind/namespace/name. A backup records
// it; after a restore the same listing must hold every entry again (RESTORE_INCOMPLETE lists the rest).
// Pure: the remote listing is parsed here, run by phases/backup.ts and phases/k3s/restore-gate.ts.

/**
 * Kinds left out of the inventory: controllers recreate Pods under new names and Events expire, so
 * neither says whether the restore kept the cluster's state.
 */
const VOLATILE_KINDS = new Set(['Pod', 'Event']);
// metrics.k8s.io types are computed live by metrics-server, never stored: an unavailable metrics API
// must not make a backup impossible.
const VOLATILE_RESOURCES = /^(pods|events|events\.events\.k8s\.io|[\w-]+\.metrics\.k8s\.io)$/;

/** A resource type (`kubectl api-resources -o name`'s name) left out of the inventory. */
export const isVolatileResource = (name: string) => VOLATILE_RESOURCES.test(name);

/** The resource types to list, from `kubectl api-resources --verbs=list -o name`. */
export function listableResources(apiResources: string): string[] {
  return apiResources
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !VOLATILE_RESOURCES.test(l));
}

/**
 * The shell command that prints one `Kind namespace name` line per object (a cluster-scoped object's
 * namespace is empty). All types in ONE kubectl call (a call per type took minutes on a busy server); a type
 * that fails to list fails the whole command: an incomplete inventory must not pass for a complete one.
 */
export function listObjectsCommand(kubectl = 'k3s kubectl'): string {
  const tpl = `{range .items[*]}{.kind}{" "}{.metadata.namespace}{" "}{.metadata.name}{"\\n"}{end}`;
  return [
    'set -e',
    `types=$(${kubectl} api-resources --verbs=list -o name | grep -vxE '${VOLATILE_RESOURCES.source.slice(2, -2)}' | paste -sd, -)`,
    `${kubectl} get "$types" -A -o jsonpath='${tpl}'`,
  ].join('\n');
}

/** `Kind/namespace/name` keys (cluster-scoped: `Kind//name`), sorted and without duplicates. */
export function objectKeys(listing: string): string[] {
  const keys = new Set<string>();
  for (const line of listing.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 2 || !parts[0]) continue;
    // jsonpath prints an absent namespace as nothing: "Kind  name" splits into two fields.
    const [kind, ns, name] = parts.length === 2 ? [parts[0], '', parts[1]] : parts;
    if (VOLATILE_KINDS.has(kind)) continue;
    keys.add(`${kind}/${ns}/${name}`);
  }
  return [...keys].sort();
}

/** How many objects of each kind: the manifest's summary line. */
export function countsByKind(keys: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const k of keys) {
    const kind = k.slice(0, k.indexOf('/'));
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** The backup's objects the cluster does not have now. */
export function missingObjects(expected: string[], now: string[]): string[] {
  const have = new Set(now);
  return expected.filter((k) => !have.has(k));
}
