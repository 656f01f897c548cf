// Draining a node as `kubectl drain` does, through the eviction API so that PodDisruptionBudgets hold:
// cordon it, evict every pod a drain moves, retry an eviction the API refuses with 429 every 5 s, and wait
// until the evicted pods are gone — all within one budget. A drain that stops uncordons the node again when
// this tool cordoned it, and names what held it: the pod and the PodDisruptionBudget that refused it
// (DRAIN_BLOCKED), or the pods that did not go (DRAIN_TIMEOUT). The API is an interface (DrainApi: the real
// one is src/kube/drain-client.ts), so the logic here is tested with a fake API and a fake clock.
//
// Which node this tool cordoned is written on the node: the annotation CORDONED_BY (its value the caller's
// mark, e.g. the run id). A node cordoned by someone else before the drain carries none; the drain neither
// marks it nor uncordons it, and `uncordon` leaves it cordoned.
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';
import type { Clock } from '../engine/clock.ts';
import { CauseError } from '../errors.ts';

/** The annotation on a Node this tool cordoned; `uncordon` uncordons only nodes that carry it. */
export const CORDONED_BY = 'bootstrap.k3s.io/cordoned';

export interface PodRef {
  namespace: string;
  name: string;
  /** The pod's uid: a pod of the same name with another uid (a StatefulSet's next one) is a new pod. */
  uid?: string;
}

/** A pod on the node, as far as a drain needs to know it. */
export interface PodSeen extends PodRef {
  /** status.phase: Pending, Running, Succeeded, Failed, Unknown. */
  phase?: string;
  /** The kind of the controlling owner reference (`controller: true`), e.g. ReplicaSet, DaemonSet. */
  controllerKind?: string;
  /** A static pod's mirror (annotation kubernetes.io/config.mirror): the API cannot evict it. */
  mirror: boolean;
}

export interface NodeSeen {
  unschedulable: boolean;
  /** The value of CORDONED_BY, when the node carries it. */
  cordonedBy?: string;
}

/** The cause of a Status the API answered with (details.causes). */
export interface StatusCause {
  /** The cause's machine-readable kind (DisruptionBudget, NamespaceTerminating): "reason" in the JSON. */
  type?: string;
  message?: string;
}

export type EvictOutcome = { ok: true } | { ok: false; status: number; message: string; causes: StatusCause[] };

/** The API calls a drain makes. Errors other than an eviction's refusal are thrown as CauseErrors. */
export interface DrainApi {
  readNode(node: string): Promise<NodeSeen>;
  /** Sets spec.unschedulable and the CORDONED_BY annotation (null removes it), in one merge patch. */
  setUnschedulable(node: string, on: boolean, cordonedBy: string | null): Promise<void>;
  podsOn(node: string): Promise<PodSeen[]>;
  evict(pod: PodRef): Promise<EvictOutcome>;
  /** True when the pod is not there any more (404), or a pod of that name with another uid is. */
  podGone(pod: PodRef): Promise<boolean>;
}

export interface DrainOptions {
  /** The whole drain, cordon to the last pod gone, in ms. */
  budgetMs: number;
  /** The pause before an eviction refused with 429 is asked again (kubectl drain's: 5 s). */
  retryEveryMs?: number;
  /** The pause between two looks at the evicted pods (kubectl drain's: 1 s). */
  goneEveryMs?: number;
  clock: Clock;
  signal: AbortSignal;
  /** The value of the CORDONED_BY annotation (the run id, say). */
  mark?: string;
  /** One line per eviction started and per refusal retried, worded as kubectl drain words them. */
  progress?: (line: string) => void;
}

export interface DrainResult {
  /** ns/name of every pod evicted (and gone). */
  evicted: string[];
  /** ns/name of the pods a drain leaves (DaemonSet, mirror, finished). */
  left: string[];
  /** Whether the node was cordoned by this tool (false: it was cordoned before, and stays so). */
  cordonedHere: boolean;
}

const RETRY_MS = 5_000;
const GONE_MS = 1_000;

const podName = (p: PodRef) => `${p.namespace}/${p.name}`;

/** Why a drain leaves a pod on the node, or undefined when it evicts it (kubectl drain's filters). */
function leftBecause(p: PodSeen): string | undefined {
  if (p.mirror) return 'a static pod (mirror)';
  if (p.controllerKind === 'DaemonSet') return 'managed by a DaemonSet';
  if (p.phase === 'Succeeded' || p.phase === 'Failed') return `finished (${p.phase})`;
  return undefined;
}

/**
 * The eviction API's words for a budget that refuses (pkg/registry/core/pod/storage/eviction.go): "The
 * disruption budget %s needs %d healthy pods and has %d currently", "… is still being processed by the
 * server."; newer releases add "… does not allow evicting pods currently …". Each begins with the name.
 */
const BUDGET_CAUSE = /^The disruption budget (\S+) /;
/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { BUDGET_CAUSE };

/** The PodDisruptionBudget named by a 429's DisruptionBudget cause ("The disruption budget NAME needs …"). */
export function blockingBudget(causes: readonly StatusCause[]): { name: string; message: string } | undefined {
  for (const c of causes) {
    const m = BUDGET_CAUSE.exec(c.message ?? '');
    if (m && (c.type === undefined || c.type === 'DisruptionBudget')) return { name: m[1], message: c.message! };
  }
  return undefined;
}

/** A refusal an eviction is retried after: a PDB (429), or a namespace being deleted (403 NamespaceTerminating). */
function retriable(o: Extract<EvictOutcome, { ok: false }>): boolean {
  return o.status === 429 || (o.status === 403 && o.causes.some((c) => c.type === 'NamespaceTerminating'));
}

/** The line kubectl drain prints for a refusal it retries (k8s.io/kubectl pkg/drain/drain.go). */
function retryLine(p: PodRef, o: Extract<EvictOutcome, { ok: false }>, afterMs: number): string {
  const after = `${afterMs / 1000}s`;
  const why = [o.message, ...o.causes.map((c) => c.message).filter(Boolean)].join(' ');
  return o.status === 429
    ? `error when evicting pods/"${p.name}" -n "${p.namespace}" (will retry after ${after}): ${why}`
    : `error when evicting pod "${p.name}" from terminating namespace "${p.namespace}" (will retry after ${after}): ${why}`;
}

interface Pending {
  pod: PodSeen;
  nextTryAt: number;
  refused?: Extract<EvictOutcome, { ok: false }>;
}

/**
 * Cordons `node`, evicts its pods and waits until they are gone, within `budgetMs`. Throws DRAIN_BLOCKED
 * (a pod still refused by a PodDisruptionBudget), DRAIN_TIMEOUT (evicted pods still there) or the API's
 * own CauseError; on every stop the node is uncordoned again when this drain cordoned it.
 */
export async function drainNode(api: DrainApi, node: string, o: DrainOptions): Promise<DrainResult> {
  const { clock } = o;
  const retryMs = o.retryEveryMs ?? RETRY_MS;
  const goneMs = o.goneEveryMs ?? GONE_MS;
  const t0 = clock.now();
  const before = await api.readNode(node);
  // A node cordoned by someone else stays theirs; one this tool cordoned (an earlier run that stopped) is ours.
  const cordonedHere = !before.unschedulable || before.cordonedBy !== undefined;
  if (cordonedHere) await api.setUnschedulable(node, true, o.mark ?? 'true');
  try {
    return { ...(await evictAll(api, node, o, t0, retryMs, goneMs)), cordonedHere };
  } catch (err) {
    // The stop is what the operator needs; a node left cordoned besides is said, not thrown over it.
    if (cordonedHere)
      await api.setUnschedulable(node, false, null).catch((e: unknown) => o.progress?.(`could not uncordon ${node} again: ${(e as Error).message}`));
    throw err;
  }
}

async function evictAll(api: DrainApi, node: string, o: DrainOptions, t0: number, retryMs: number, goneMs: number) {
  const { clock, signal } = o;
  const pods = await api.podsOn(node);
  const left = pods.filter((p) => leftBecause(p) !== undefined).map(podName);
  const pending: Pending[] = pods.filter((p) => leftBecause(p) === undefined).map((pod) => ({ pod, nextTryAt: t0 }));
  const going: PodSeen[] = [];
  const evicted: string[] = [];

  for (;;) {
    const now = clock.now();
    for (const p of pending.filter((x) => x.nextTryAt <= now)) {
      if (!p.refused) o.progress?.(`evicting pod ${podName(p.pod)}`);
      const outcome = await api.evict(p.pod);
      if (outcome.ok || outcome.status === 404) {
        pending.splice(pending.indexOf(p), 1);
        if (outcome.ok) going.push(p.pod);
      } else if (retriable(outcome)) {
        p.refused = outcome;
        p.nextTryAt = now + retryMs;
        if (now + retryMs - t0 < o.budgetMs) o.progress?.(retryLine(p.pod, outcome, retryMs));
      } else {
        throw apiRefused(node, p.pod, outcome);
      }
    }
    for (const pod of [...going]) {
      if (await api.podGone(pod)) {
        going.splice(going.indexOf(pod), 1);
        evicted.push(podName(pod));
      }
    }
    if (!pending.length && !going.length) return { evicted, left };

    const spent = clock.now() - t0;
    if (spent >= o.budgetMs) throw stopped(node, pending, going, o.budgetMs);
    // The next look: the next eviction due, or the next look at the pods going, never past the budget.
    const nextTry = Math.min(...pending.map((p) => p.nextTryAt - t0));
    const next = Math.min(going.length ? spent + goneMs : Infinity, nextTry, o.budgetMs);
    await clock.sleep(Math.max(0, next - spent), signal);
  }
}

/** The stop when the budget ran out: a refused eviction outranks pods still terminating. */
function stopped(node: string, pending: Pending[], going: PodSeen[], budgetMs: number): CauseError {
  const within = `within ${budgetMs / 1000} s`;
  const refused = pending.filter((p) => p.refused);
  if (refused.length) {
    const first = refused.find((p) => blockingBudget(p.refused!.causes)) ?? refused[0];
    const r = first.refused!;
    const pdb = blockingBudget(r.causes);
    const lines = refused.map(
      (p) => `${podName(p.pod)}: HTTP ${p.refused!.status} ${[p.refused!.message, ...p.refused!.causes.map((c) => c.message)].filter(Boolean).join(' ')}`,
    );
    return new CauseError('DRAIN_BLOCKED', {
      host: node,
      message: pdb
        ? `pod ${podName(first.pod)} on ${node} is held by PodDisruptionBudget ${first.pod.namespace}/${pdb.name}: not evicted ${within}`
        : `pod ${podName(first.pod)} on ${node} was refused eviction (HTTP ${r.status}) until the end of the drain's ${budgetMs / 1000} s`,
      evidence: {
        command: pdb ? `kubectl -n ${first.pod.namespace} get pdb ${pdb.name} -o wide` : `kubectl -n ${first.pod.namespace} get pdb -o wide`,
        seen: `eviction of ${podName(first.pod)}: HTTP ${r.status} ${r.message}${pdb ? ` ${pdb.message}` : ''}`,
        excerpt: lines.join('\n'),
      },
    });
  }
  const still = [...going.map(podName), ...pending.map((p) => podName(p.pod))];
  return new CauseError('DRAIN_TIMEOUT', {
    host: node,
    message: `${still.length} evicted pod(s) still on ${node} after ${budgetMs / 1000} s: ${still.join(', ')}`,
    evidence: {
      command: `kubectl get pods -A --field-selector spec.nodeName=${node} -o wide`,
      seen: `still there: ${still.join(', ')}`,
    },
  });
}

/** An eviction the API answered with a status no retry helps (kubectl drain stops on it too). */
function apiRefused(node: string, pod: PodRef, o: Extract<EvictOutcome, { ok: false }>): CauseError {
  return new CauseError('KUBE_API_FAILED', {
    host: node,
    message: `evicting pod ${podName(pod)} from ${node}: HTTP ${o.status} ${o.message}`,
    evidence: {
      command: `kubectl -n ${pod.namespace} get pod ${pod.name} -o wide`,
      seen: `POST /api/v1/namespaces/${pod.namespace}/pods/${pod.name}/eviction: HTTP ${o.status} ${o.message}`,
      excerpt: o.causes.map((c) => `${c.type ?? ''}: ${c.message ?? ''}`).join('\n') || undefined,
    },
  });
}

/**
 * Uncordons `node` when this tool cordoned it (it carries CORDONED_BY), removing the annotation; a node
 * cordoned by someone else is left as it is. True when it was uncordoned.
 */
export async function uncordon(api: DrainApi, node: string): Promise<boolean> {
  const seen = await api.readNode(node);
  if (seen.cordonedBy === undefined) return false;
  await api.setUnschedulable(node, false, null);
  return true;
}
