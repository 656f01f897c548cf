// Putting the cluster's admin kubeconfig into an operator's own kubeconfig under one name: a cluster, a
// user and a context all called that name, the layout `kubectl config set-context` makes. What is there
// already under that name is replaced only when it is this same cluster (the same CA): anything else by
// that name belongs to another cluster and is refused by name, never overwritten. Pure: text in, text out.
import { parse, stringify } from 'yaml';

interface Named {
  name: string;
  [k: string]: unknown;
}

interface KubeconfigDoc {
  clusters?: Named[];
  users?: Named[];
  contexts?: Named[];
  'current-context'?: string;
  [k: string]: unknown;
}

export type MergeOutcome = { ok: true; text: string; replaced: boolean; server: string; currentContextSet: boolean } | { ok: false; seen: string };

const caOf = (cluster: Named | undefined): string | undefined => (cluster?.cluster as Record<string, string> | undefined)?.['certificate-authority-data'];
const serverOf = (cluster: Named | undefined): string => (cluster?.cluster as Record<string, string> | undefined)?.server ?? '';

/** The admin kubeconfig's one cluster and one user (k3s writes both as "default"). */
function adminParts(sourceText: string): { cluster: Named; user: Named } {
  const doc = parse(sourceText) as KubeconfigDoc | null;
  const cluster = doc?.clusters?.[0];
  const user = doc?.users?.[0];
  if (!cluster || !caOf(cluster) || !user) throw new Error('the admin kubeconfig has no cluster with a CA, or no user');
  return { cluster, user };
}

/** The server the admin kubeconfig dials (the VIP, as the state folder's copy is written). */
export const adminServer = (sourceText: string): string => serverOf(adminParts(sourceText).cluster);

/**
 * `targetText` (undefined: no file yet) with `name`'s cluster, user and context set to the admin
 * kubeconfig's. Its current context is set only when it had none: switching is the operator's call.
 */
export function mergeKubeconfig(targetText: string | undefined, sourceText: string, name: string): MergeOutcome {
  const { cluster, user } = adminParts(sourceText);
  let target: KubeconfigDoc;
  try {
    const parsed = targetText === undefined || !targetText.trim() ? {} : parse(targetText);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, seen: 'the file is not a kubeconfig (not a YAML mapping)' };
    target = parsed as KubeconfigDoc;
  } catch (e) {
    return { ok: false, seen: `the file is not YAML: ${(e as Error).message.split('\n')[0]}` };
  }
  for (const list of ['clusters', 'users', 'contexts'] as const) {
    if (target[list] !== undefined && !Array.isArray(target[list])) return { ok: false, seen: `its "${list}" is not a list` };
  }
  const clusters = target.clusters ?? [];
  const users = target.users ?? [];
  const contexts = target.contexts ?? [];
  const ca = caOf(cluster);
  const sameName = (e: Named) => e?.name === name;

  const context = contexts.find(sameName);
  const contextCluster = context && clusters.find((c) => c?.name === (context.context as Record<string, string> | undefined)?.cluster);
  if (context && caOf(contextCluster) !== ca) {
    return { ok: false, seen: `context "${name}" there points at ${describe(contextCluster)}, whose CA is not this cluster's` };
  }
  const namedCluster = clusters.find(sameName);
  if (namedCluster && caOf(namedCluster) !== ca)
    return { ok: false, seen: `cluster "${name}" there is ${describe(namedCluster)}, whose CA is not this cluster's` };
  // A user of that name without this cluster's context or cluster entry holds someone else's credentials.
  if (users.some(sameName) && !context && !namedCluster) return { ok: false, seen: `user "${name}" there belongs to no context or cluster of this cluster` };

  const replaced = Boolean(context || namedCluster || users.some(sameName));
  const put = (list: Named[], entry: Named) => [...list.filter((e) => !sameName(e)), entry];
  const currentContextSet = !target['current-context'];
  const merged: KubeconfigDoc = {
    apiVersion: 'v1',
    kind: 'Config',
    ...target,
    clusters: put(clusters, { ...cluster, name }),
    users: put(users, { ...user, name }),
    contexts: put(contexts, { name, context: { cluster: name, user: name } }),
    ...(currentContextSet && { 'current-context': name }),
  };
  return { ok: true, text: stringify(merged), replaced, server: serverOf(cluster), currentContextSet };
}

function describe(cluster: Named | undefined): string {
  if (!cluster) return 'no cluster entry';
  const server = serverOf(cluster);
  return `cluster "${cluster.name}"${server ? ` (${server})` : ''}`;
}
