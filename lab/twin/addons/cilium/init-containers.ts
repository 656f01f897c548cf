// The Cilium agent pod's init containers, as the chart 1.19.5 lists them (templates/cilium-agent/daemonset.yaml)
// and kubelet runs them: one after another in spec order, each to completion before the next; a failed one is
// started again (restartPolicy Always) after kubelet's back-off, 10 s doubling up to 5 min
// (kubernetes v1.33.5 pkg/kubelet/kubelet.go backOffPeriod / MaxContainerBackOff), while the pod shows
// Init:CrashLoopBackOff. What each one does here:
//   config (`cilium-dbg build-config`): dials the API server exactly as the agent does (connect.ts) and
//     fails with upstream's lines when it cannot (cilium-dbg/cmd/build-config.go: `Build config failed`).
//   wait-for-kube-proxy, wait-for-node-init: wait forever, printing their loop's line each second (k3s
//     runs no kube-proxy here; there is no node-init DaemonSet).
//   mount-cgroup, apply-sysctl-overwrites, mount-bpf-fs, clean-cilium-state, install-cni-binaries and any
//     other: succeed at once, printing nothing (their host changes are not imitated).
import type { InitContainerState, Terminated } from '../daemonsets.ts';
import type { NodeContext } from '../context.ts';
import { containerEnv } from '../scheduling.ts';
import { kubernetesServiceIP } from '../../service-network.ts';
import { ciliumLine as slogLine, goDuration, waitForConn } from './connect.ts';

export const BACKOFF_START_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

export interface InitRunner {
  ctx: NodeContext;
  pod: any;
  logFor(container: string, run: number): (line: string) => void;
  sleep(ms: number): Promise<void>;
  stopped(): boolean;
  report(): void;
}

/** kubelet's waiting message while a failed container sits out its back-off. */
export function backOffMessage(backoffMs: number, container: string, pod: any): string {
  return `back-off ${goDuration(backoffMs)} restarting failed container=${container} pod=${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
}

export function initialStates(pod: any): InitContainerState[] {
  return (pod.spec?.initContainers ?? []).map((c: any) => ({ name: c.name, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }));
}

/** Runs every init container to completion, in order, restarting a failed one with back-off. Resolves once all completed. */
export async function runInitContainers(r: InitRunner, states: InitContainerState[]): Promise<void> {
  const specs: any[] = r.pod.spec?.initContainers ?? [];
  for (const [i, spec] of specs.entries()) {
    const st = states[i]!;
    let backoff = BACKOFF_START_MS;
    for (;;) {
      const startedAt = new Date().toISOString();
      st.state = { running: { startedAt } };
      r.report();
      const lines: string[] = [];
      const write = r.logFor(spec.name, st.restartCount);
      const log = (line: string) => {
        lines.push(line);
        write(line);
      };
      const code = await runOne(r, spec, log);
      const term: Terminated = { exitCode: code, reason: code === 0 ? 'Completed' : 'Error', startedAt, finishedAt: new Date().toISOString() };
      // terminationMessagePolicy FallbackToLogsOnError: a failed container's message is its log's tail.
      if (code !== 0 && spec.terminationMessagePolicy === 'FallbackToLogsOnError') term.message = lines.slice(-80).join('\n') + '\n';
      if (code === 0) {
        st.state = { terminated: term };
        r.report();
        break;
      }
      st.lastState = { terminated: term };
      st.restartCount++;
      st.state = { waiting: { reason: 'CrashLoopBackOff', message: backOffMessage(backoff, spec.name, r.pod) } };
      r.report();
      await r.sleep(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  }
}

async function runOne(r: InitRunner, spec: any, log: (line: string) => void): Promise<number> {
  switch (spec.name) {
    case 'config':
      return buildConfig(r, spec, log);
    case 'wait-for-kube-proxy':
      return waitForever(r, log, 'Waiting for kube-proxy to create iptables rules...');
    case 'wait-for-node-init':
      return waitForever(r, log, 'Waiting on node-init to run...');
    default:
      return 0;
  }
}

async function waitForever(r: InitRunner, log: (line: string) => void, line: string): Promise<number> {
  for (;;) {
    log(line);
    await r.sleep(1000);
  }
}

/** `cilium-dbg build-config`: its hive starts the k8s client, which must reach the API server first. */
async function buildConfig(r: InitRunner, spec: any, log: (line: string) => void): Promise<number> {
  const env = containerEnv(spec, r.pod, { host: kubernetesServiceIP(r.ctx.serviceCidr), port: '443' });
  const dbg = { subsys: 'cilium-dbg' };
  log(slogLine('INFO', 'Running', dbg));
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  if (!host || !port) {
    const err =
      'unable to create k8s client rest configuration: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined';
    return hiveFailed(log, err, 0);
  }
  // v1.19's config container starts its hive, whose k8s client then dials (cilium issues #44464, #46010:
  // `msg=Running`, `msg="Starting hive"`, then `Establishing connection to apiserver`).
  log(slogLine('INFO', 'Starting hive', dbg));
  const c = await waitForConn(r.ctx, host, port, (msg, url) => log(slogLine('INFO', msg, { ...dbg, module: 'k8s-client', ipAddr: url })), r.sleep, r.stopped);
  if (c.ok) {
    log(slogLine('INFO', 'Connected to apiserver', { ...dbg, module: 'k8s-client' }));
    return 0;
  }
  log(slogLine('ERROR', 'Unable to contact k8s api-server', { ...dbg, module: 'k8s-client', ipAddr: c.url, error: c.error! }));
  return hiveFailed(log, c.error!, c.tookMs);
}

function hiveFailed(log: (line: string) => void, err: string, tookMs: number): number {
  const dbg = { subsys: 'cilium-dbg' };
  log(slogLine('ERROR', 'Start hook failed', { ...dbg, function: 'client.(*compositeClientset).onStart (k8s-client)', error: err }));
  log(slogLine('ERROR', 'Failed to start hive', { ...dbg, error: err, duration: goDuration(tookMs) }));
  log(slogLine('INFO', 'Stopping hive', dbg));
  log(slogLine('INFO', 'Stopped hive', dbg));
  log(`Error: Build config failed: failed to start: ${err}`);
  return 1;
}
