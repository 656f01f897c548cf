// A step that keeps Kubernetes objects applied: the probe reads each object's applied hash (never its
// content: a Secret's data must not reach the run log), the plan applies the absent and changed ones
// with one server-side apply. Reused for Flux's install, the deploy-key Secret and the sync objects.
import type { ActionChange } from '../../src/engine/changes.ts';
import { CauseError } from '../../src/errors.ts';
import { apiApply } from '../../src/kube/api-apply.ts';
import { connectionLost } from '../../src/transport/lost.ts';
import { applyFailed } from '../../src/engine/apply.ts';
import type { ReadContext } from '../../src/engine/context.ts';
import { hostFact } from '../../src/engine/facts.ts';
import type { ApiReads, HostRef, Plan, ProbeCommand, ProbeResults, Step } from '../../src/engine/phase.ts';
import { listPath, objectsOf } from '../../src/kube/resources.ts';
import { APPLIED_HASH, drift, kubectlRef, objectKey, toYaml, type Drift, type KubeObject } from './manifests.ts';

const APPLY_COMMAND = 'k3s kubectl apply --server-side --force-conflicts --field-manager=bootstrap -f -';

// custom-columns prints one line per object found, whether one or many were asked for; `<none>` for no value.
const COLUMNS = `KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name,HASH:.metadata.annotations.${APPLIED_HASH},ESTABLISHED:.status.conditions[?(@.type=="Established")].status`;

/**
 * Read-only: one `kubectl get` per namespace, naming each object (absent ones print nothing). Through the API,
 * one list per kind in the namespace, printed as those columns for the objects named: a Table of metadata
 * (no Secret's data leaves the server), the whole objects only for CustomResourceDefinitions (whose status
 * says Established). A kind without a known list path leaves the namespace's read to kubectl.
 */
export function probeObjects(objects: KubeObject[]): Record<string, ProbeCommand> {
  const byNs = new Map<string, KubeObject[]>();
  for (const o of objects) byNs.set(o.metadata.namespace ?? '', [...(byNs.get(o.metadata.namespace ?? '') ?? []), o]);
  const out: Record<string, ProbeCommand> = {};
  [...byNs].forEach(([ns, objs], i) => {
    out[`objects${i}`] = {
      command: `k3s kubectl get ${objs.map(kubectlRef).join(' ')}${ns ? ` -n ${ns}` : ''} --ignore-not-found --no-headers -o custom-columns='${COLUMNS}'`,
      sudo: true,
      api: listsOf(objs, ns),
    };
  });
  return out;
}

/** The namespace's objects as list GETs, one per kind, printed as COLUMNS prints the named ones. */
function listsOf(objs: KubeObject[], ns: string): ApiReads | undefined {
  const kinds = new Map<string, { apiVersion: string; kind: string; names: Set<string> }>();
  for (const o of objs) {
    const k = `${o.apiVersion} ${o.kind}`;
    const entry = kinds.get(k) ?? { apiVersion: o.apiVersion, kind: o.kind, names: new Set<string>() };
    kinds.set(k, entry);
    entry.names.add(o.metadata.name);
  }
  const lists = [...kinds.values()].map((k) => ({ ...k, path: listPath(k.apiVersion, k.kind, ns || undefined) }));
  if (lists.some((l) => !l.path)) return undefined;
  const none = (v: unknown) => (v === undefined || v === null || v === '' ? '<none>' : String(v));
  return {
    gets: lists.map((l) => ({ path: l.path!, table: l.kind !== 'CustomResourceDefinition' })),
    print: (bodies) =>
      lists
        .flatMap((l, i) =>
          objectsOf(bodies[i])
            .filter((o) => l.names.has(o.metadata?.name))
            .map((o) => {
              const established = (o.status?.conditions ?? []).find((c: { type?: string }) => c.type === 'Established')?.status;
              return [l.kind, none(o.metadata.namespace), o.metadata.name, none(o.metadata.annotations?.[APPLIED_HASH]), none(established)].join('   ');
            }),
        )
        .map((line) => `${line}\n`)
        .join(''),
  };
}

export interface LiveObject {
  hash?: string;
  established?: boolean;
}

/**
 * What the probes saw, by objectKey. A probe that failed (no API yet in check mode of a cold build, or a
 * kind whose CRD is not installed yet) saw nothing: its objects are planned as absent.
 */
export function parseLive(probe: ProbeResults): Map<string, LiveObject> {
  const live = new Map<string, LiveObject>();
  for (const [k, r] of Object.entries(probe)) {
    if (!k.startsWith('objects') || r.code !== 0) continue;
    for (const line of r.stdout.split('\n')) {
      const [kind, ns, name, hash, established] = line.trim().split(/\s+/);
      if (!kind || !name) continue;
      const none = (v: string | undefined) => (v === undefined || v === '<none>' ? undefined : v);
      live.set(objectKey({ kind, metadata: { name, namespace: none(ns) } }), {
        hash: none(hash),
        established: none(established) === undefined ? undefined : established === 'True',
      });
    }
  }
  return live;
}

export function driftOf(desired: KubeObject[], live: Map<string, LiveObject>): Drift {
  return drift(desired, new Map([...live].map(([k, v]) => [k, v.hash])));
}

/** The field manager of every apply of the engine (what `kubectl apply --server-side --field-manager` names). */
const FIELD_MANAGER = 'bootstrap';

/**
 * The one apply of a step, described as check mode shows it: a server-side apply through the Kubernetes API over
 * the run's SSH connection to `via` (src/kube/api-apply.ts), APPLY_COMMAND with the objects on stdin when the API
 * cannot be asked that way. A refused object is APPLY_FAILED naming it and the API's words.
 */
export function applyChange(d: Drift, opts: { secret?: boolean; via: string }): ActionChange[] {
  const objects = [...d.create, ...d.update];
  if (!objects.length) return [];
  // A few objects are named; the install's many are counted by kind (check mode stays readable).
  const list = (os: KubeObject[]) => {
    if (os.length <= 4) return os.map(objectKey).join(', ');
    const kinds = new Map<string, number>();
    for (const o of os) kinds.set(o.kind, (kinds.get(o.kind) ?? 0) + 1);
    return `${os.length} objects (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')})`;
  };
  const parts = [d.create.length ? `create ${list(d.create)}` : '', d.update.length ? `update ${list(d.update)}` : ''].filter(Boolean);
  const shown = `PATCH <each object's path>?fieldManager=${FIELD_MANAGER}&force=true (a server-side apply, application/apply-patch+yaml), one object after the other${opts.secret ? " (the Secret's content not shown)" : ''}   (Kubernetes API through the SSH connection to ${opts.via}; without the state folder's kubeconfig: sudo ${APPLY_COMMAND} there, the objects on stdin)`;
  return [
    {
      kind: 'action',
      description: opts.secret ? `${d.create.length ? 'create' : 'update'} ${list(objects)} (secret, not shown)` : parts.join('; '),
      runs: [shown],
      budgetMs: APPLY_BUDGET_MS,
      run: async (ctx) => {
        const applied = await apiApply(ctx, ctx.host, objects, FIELD_MANAGER);
        if (applied?.ok) return;
        if (applied)
          throw new CauseError('APPLY_FAILED', {
            host: ctx.host.name,
            message: `The API refused ${objectKey(applied.failed as KubeObject)}`,
            evidence: { command: shown, seen: applied.said },
          });
        const res = await ctx
          .remote(ctx.host)
          .exec(APPLY_COMMAND, { sudo: true, stdin: toYaml(objects), secret: opts.secret, timeoutMs: APPLY_BUDGET_MS, signal: ctx.signal });
        if (res.lost) throw connectionLost(ctx.host.name, APPLY_COMMAND);
        if (res.code !== 0) throw applyFailed(ctx.host.name, APPLY_COMMAND, res.code, res.stderr || res.stdout);
      },
    },
  ];
}

/** The apply's budget: the install's few dozen objects on a busy server. */
const APPLY_BUDGET_MS = 180_000;

/** The flux phase's steps that apply objects (phases/flux.ts), by id. */
export const FLUX_APPLY_STEPS = ['install', 'deploy-key', 'sync'] as const;

/**
 * Whether the step `id` applies anything this run (its plan saw objects absent or changed): the gate after it
 * then proves the new objects by a reconcile (a new deploy key shows in no status), never by the statuses alone.
 */
export const appliesThisRun = (id: string) => hostFact<boolean>(`flux.applies.${id}`);

export interface AppliedObjectsSpec {
  id: string;
  title: string;
  objects: (ctx: ReadContext) => KubeObject[];
  secret?: boolean;
  /** Extra read-only probes (their results reach `extend`). */
  probe?: (host: HostRef, ctx: ReadContext) => Record<string, ProbeCommand>;
  /** More of the plan: extra changes and facts from what was seen. */
  extend?: (live: Map<string, LiveObject>, probe: ProbeResults, ctx: ReadContext, d: Drift, host: HostRef) => Partial<Plan>;
}

export function appliedObjects(spec: AppliedObjectsSpec): Step {
  return {
    id: spec.id,
    title: spec.title,
    probe: (host, ctx) => ({ ...probeObjects(spec.objects(ctx)), ...spec.probe?.(host, ctx) }),
    plan: ({ probe, ctx, host }) => {
      const live = parseLive(probe);
      const d = driftOf(spec.objects(ctx), live);
      const more = spec.extend?.(live, probe, ctx, d, host) ?? {};
      return {
        changes: [...applyChange(d, { secret: spec.secret, via: host.name }), ...(more.changes ?? [])],
        stops: more.stops,
        facts: [...(more.facts ?? []), appliesThisRun(spec.id)(d.create.length + d.update.length > 0)],
      };
    },
  };
}
