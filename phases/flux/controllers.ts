// Flux's controllers as the kubelet reports them, for the flux phase's waits: a controller whose container
// exits at every start reconciles nothing, so waiting for its objects only waits out the budget and then
// names them (a GitRepository "not answered", a Kustomization not Ready) instead of the controller. kubelet
// restarts a failed container at once after its first exit and holds it back after the second — the
// container waits `CrashLoopBackOff` for 10 s, then 20 s, 40 s … up to 5 min (kubernetes/kubernetes
// pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff, pkg/kubelet/kubelet.go backOffPeriod,
// MaxContainerBackOff) — so a container in CrashLoopBackOff after a restart has failed twice in a row and
// each wait is longer than the last: the wait names it at the first look that sees it. Pure, but for the
// log read.
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { CauseError } from '../../src/errors.ts';
import { apiRead, apiReadLists, podLogPath } from '../../src/kube/api-read.ts';

export const FLUX_NAMESPACE = 'flux-system';
/** How many of the crashed run's log lines the cause carries. */
const CRASH_LOG_LINES = 20;

interface CrashLoop {
  /** The controller (the Deployment's `app` label, as Flux's manifests set it). */
  controller: string;
  pod: string;
  namespace: string;
  node: string;
  container: string;
  restartCount: number;
  /** kubelet's waiting message: `back-off 20s restarting failed container=manager pod=…`. */
  backOff: string;
  /** The last exit, when kubelet reports it. */
  exit?: { exitCode?: number; reason?: string; signal?: number; finishedAt?: string };
}

/** The controller a pod belongs to: its `app` label, else its ReplicaSet's name without the template hash. */
function controllerOf(pod: any): string {
  const app = pod?.metadata?.labels?.app;
  if (app) return app;
  const rs = (pod?.metadata?.ownerReferences ?? []).find((o: any) => o.kind === 'ReplicaSet')?.name as string | undefined;
  return rs ? rs.replace(/-[a-z0-9]+$/, '') : (pod?.metadata?.name ?? '');
}

const runs = (c: any) => JSON.stringify([c?.image, c?.command ?? null, c?.args ?? null]);

/**
 * Whether the container still runs what its Deployment's template says (image, command, args): a pod of an
 * older template is on its way out (the template was just fixed), and its crash loop is no longer the story.
 */
function current(pod: any, container: string, deployments: any[]): boolean {
  const d = deployments.find((x) => x?.metadata?.name === controllerOf(pod));
  const want = d?.spec?.template?.spec?.containers?.find((c: any) => c.name === container);
  if (!want) return true;
  return runs(want) === runs((pod.spec?.containers ?? []).find((c: any) => c.name === container));
}

/** Every container of these pods waiting CrashLoopBackOff after at least one restart (of the Deployments' current templates, when given). */
function crashLoops(pods: any[], deployments: any[] = []): CrashLoop[] {
  const out: CrashLoop[] = [];
  for (const p of pods) {
    if (p?.metadata?.deletionTimestamp) continue;
    for (const s of p?.status?.containerStatuses ?? []) {
      const w = s?.state?.waiting;
      if (w?.reason !== 'CrashLoopBackOff' || !(s.restartCount >= 1) || !current(p, s.name, deployments)) continue;
      const t = s.lastState?.terminated;
      out.push({
        controller: controllerOf(p),
        pod: p.metadata.name,
        namespace: p.metadata.namespace,
        node: p.spec?.nodeName ?? '',
        container: s.name,
        restartCount: s.restartCount,
        backOff: w.message ?? '',
        ...(t ? { exit: { exitCode: t.exitCode, reason: t.reason, signal: t.signal, finishedAt: t.finishedAt } } : {}),
      });
    }
  }
  return out;
}

const exitText = (e: CrashLoop['exit']) =>
  !e
    ? 'exited (kubelet reports no last state)'
    : `exited with code ${e.exitCode ?? '?'}${e.reason ? ` (${e.reason})` : ''}${e.signal ? `, signal ${e.signal}` : ''}`;

/** The log lines worth showing: the last ones of the run that crashed, blank lines dropped (a list, unlike util/text's lastLines). */
function crashLogLines(log: string, n = CRASH_LOG_LINES): string[] {
  return log
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean)
    .slice(-n);
}

/** FLUX_CONTROLLER_CRASHLOOP for one crash loop, with the crashed run's last log lines (when they could be read). */
function crashLoopCause(c: CrashLoop, log: { command: string; lines?: string[] }): CauseError {
  const times = `${c.restartCount} ${c.restartCount === 1 ? 'time' : 'times'}`;
  const message = `${c.controller} is crash-looping: pod ${c.namespace}/${c.pod} on ${c.node}, container ${c.container} ${exitText(c.exit)} and was restarted ${times}; kubelet waits before the next start (${c.backOff})`;
  const lines = log.lines ?? [];
  const last = lines.length ? `; its last log line: ${lines[lines.length - 1]}` : '; it logged nothing before it exited';
  return new CauseError('FLUX_CONTROLLER_CRASHLOOP', {
    host: c.node || undefined,
    message: `${message}${log.lines === undefined ? '' : last}`,
    evidence: {
      command: log.command,
      seen: `container ${c.container} of pod ${c.namespace}/${c.pod} waiting CrashLoopBackOff after ${times}, ${exitText(c.exit)}${c.exit?.finishedAt ? ` at ${c.exit.finishedAt}` : ''}`,
      ...(log.lines === undefined ? {} : { excerpt: lines.length ? lines.join('\n') : '(no log lines)' }),
    },
  });
}

/** flux-system's pods and Deployments in one read (a List of both kinds), or undefined when they cannot be read. */
export async function readControllers(ctx: RunContext, host: HostRef): Promise<{ pods: any[]; deployments: any[] } | undefined> {
  const res = await apiReadLists(ctx, host, {
    lists: [
      { path: `/api/v1/namespaces/${FLUX_NAMESPACE}/pods`, kind: 'Pod' },
      { path: `/apis/apps/v1/namespaces/${FLUX_NAMESPACE}/deployments`, kind: 'Deployment' },
    ],
    kubectl: `get pods,deployments -n ${FLUX_NAMESPACE} -o json`,
  }).catch(() => undefined);
  if (res?.code !== 0) return undefined;
  const items: any[] = JSON.parse(res.stdout).items ?? [];
  return { pods: items.filter((i) => i.kind === 'Pod'), deployments: items.filter((i) => i.kind === 'Deployment') };
}

/**
 * The cause for the first crash-looping Flux controller among these pods (its crashed run's log read), or
 * undefined. Decided at once: see the top of this file.
 */
export async function controllerCrashLoop(ctx: RunContext, host: HostRef, pods: any[], deployments: any[] = []): Promise<CauseError | undefined> {
  const [c] = crashLoops(pods, deployments);
  if (!c) return undefined;
  // While the container waits, `kubectl logs` shows the run that exited last (kubelet validateContainerLogStatus: lastState).
  const args = `logs -n ${c.namespace} ${c.pod} -c ${c.container} --tail=${CRASH_LOG_LINES}`;
  const res = await apiRead(ctx, host, { path: podLogPath(c.namespace, c.pod, c.container, CRASH_LOG_LINES), kubectl: args }).catch(() => undefined);
  return crashLoopCause(c, { command: `kubectl ${args}`, lines: res?.code === 0 ? crashLogLines(res.stdout) : undefined });
}
