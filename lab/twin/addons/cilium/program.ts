// The Cilium agent pod (DaemonSet cilium), one per node, run inside the k3s twin as that node's pod: first
// its init containers in order (init-containers.ts; `config` dials the API server and is where an
// unreachable API shows first, the pod in Init:CrashLoopBackOff), then container cilium-agent. Each reads
// its env as the pod got it: without KUBERNETES_SERVICE_HOST it dials the kubernetes Service's ClusterIP
// (kubelet's injected first address of service-cidr, port 443), which nothing routes before Cilium on a
// cluster without kube-proxy →
// Go's i/o timeout after the k8s client's minute of tries (connect.ts), logged as Cilium does, never Ready,
// restarted with CrashLoopBackOff. With it, a TLS handshake verified against the cluster CA; on success the
// agent is Ready, writes its CNI config (/etc/cni/net.d/05-cilium.conflist — the k3s twin's Ready hook) and
// serves its status API on /var/run/cilium/cilium.sock.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN } from '../../api/resources.ts';
import type { DaemonProgram, Running, StartArgs } from '../daemonsets.ts';
import type { InitContainerState } from '../daemonsets.ts';
import { ciliumLine as slogLine, waitForConn } from './connect.ts';
import { BACKOFF_MAX_MS, BACKOFF_START_MS, backOffMessage, initialStates, runInitContainers } from './init-containers.ts';
import { HEALTH_SOCKET, serveHealth } from './health.ts';
import { agentContainer, serveStatus } from './status-api.ts';

const CONFIGMAPS = BUILTIN.find((x) => x.resource === 'configmaps')!;
const CNI_CONFLIST = '05-cilium.conflist';
const CILIUM_SOCKET = '/var/run/cilium/cilium.sock';

/** What cilium's CNI installer writes (plugins/cilium-cni, cni.exclusive). */
const CONFLIST =
  JSON.stringify(
    { cniVersion: '0.3.1', name: 'cilium', plugins: [{ type: 'cilium-cni', 'enable-debug': false, 'log-file': '/var/run/cilium/cilium-cni.log' }] },
    null,
    2,
  ) + '\n';

class Stopped extends Error {}

function ciliumAgentContainer(ds: any): any | undefined {
  return (ds?.spec?.template?.spec?.containers ?? []).find((c: any) => c.name === 'cilium-agent');
}

export function ciliumAgentProgram(): DaemonProgram {
  return { name: 'cilium-agent', container: ciliumAgentContainer, start: (a) => new Agent(a).start() };
}

class Agent {
  private stopped = false;
  private wake?: () => void;
  private api?: { close(): void };
  private health?: { close(): void };
  private inits: InitContainerState[];
  private restarts = 0;
  private run = 0;

  constructor(private a: StartArgs) {
    this.inits = initialStates(a.pod);
  }

  /** What kubelet reports for the pod: the init containers and the agent container (waiting while they run). */
  private report(s: { ready: boolean; waiting?: { reason: string; message?: string } }) {
    this.a.state({ ...s, restartCount: this.restarts, ...(this.inits.length ? { initContainers: this.inits.map((c) => ({ ...c })) } : {}) });
  }

  start(): Running {
    void this.supervise();
    return {
      stop: () => {
        this.stopped = true;
        this.wake?.();
        this.api?.close();
        this.health?.close();
      },
    };
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.reject(new Stopped());
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => (this.stopped ? reject(new Stopped()) : resolve()), ms);
      this.wake = () => {
        clearTimeout(t);
        reject(new Stopped());
      };
    });
  }

  private log(level: 'INFO' | 'WARN' | 'ERROR', msg: string, attrs: Record<string, string> = {}) {
    const line = slogLine(level, msg, attrs);
    if (this.a.logFor) this.a.logFor('cilium-agent', this.run)(line);
    else this.a.log(line);
  }

  private async supervise(): Promise<void> {
    let backoff = BACKOFF_START_MS;
    try {
      if (this.inits.length) {
        this.report({ ready: false, waiting: { reason: 'PodInitializing' } });
        await runInitContainers(
          {
            ctx: this.a.ctx,
            pod: this.a.pod,
            logFor: (c, run) => this.a.logFor?.(c, run) ?? this.a.log,
            sleep: (ms) => this.sleep(ms),
            stopped: () => this.stopped,
            report: () => this.report({ ready: false, waiting: { reason: 'PodInitializing' } }),
          },
          this.inits,
        );
      }
      for (;;) {
        this.run = this.restarts;
        this.report({ ready: false });
        if (await this.runOnce()) return;
        this.restarts++;
        this.report({ ready: false, waiting: { reason: 'CrashLoopBackOff', message: backOffMessage(backoff, 'cilium-agent', this.a.pod) } });
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    } catch (e) {
      if (!(e instanceof Stopped)) this.log('ERROR', 'unexpected', { error: (e as Error).message });
    }
  }

  /** One life of the agent: true when it came up (and keeps running), false when it exited. */
  private async runOnce(): Promise<boolean> {
    const { env, ctx } = this.a;
    const host = env.KUBERNETES_SERVICE_HOST ?? '';
    const port = env.KUBERNETES_SERVICE_PORT ?? '';
    const mod = { module: 'agent.infra.k8s-client' };
    this.log('INFO', 'Cilium 1.19.5', { module: 'agent' });
    if (!host || !port) {
      this.log('ERROR', 'Start hook failed', {
        ...mod,
        error: 'unable to create k8s client: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      });
      return false;
    }
    const c = await waitForConn(
      ctx,
      host,
      port,
      (msg, url) => this.log('INFO', msg, { ...mod, ipAddr: url }),
      (ms) => this.sleep(ms),
      () => this.stopped,
    );
    if (this.stopped) throw new Stopped();
    const url = c.url;
    if (!c.ok) {
      this.log('ERROR', 'Unable to contact k8s api-server', { ...mod, ipAddr: url, error: c.error! });
      this.log('ERROR', 'Start hook failed', { module: 'agent', error: `unable to contact k8s api-server: ${c.error}` });
      return false;
    }
    this.log('INFO', 'Connected to apiserver', mod);
    const cm = await ctx.store.tryGet(CONFIGMAPS, this.a.pod.metadata.namespace, 'cilium-config').catch(() => undefined);
    const kpr = cm?.data?.['kube-proxy-replacement'] === 'true' ? 'True' : 'False';
    const root = ctx.root ?? '/';
    const image = ciliumAgentContainer({ spec: { template: { spec: this.a.pod.spec } } })?.image ?? '';
    this.api = serveStatus(
      join(root, CILIUM_SOCKET),
      () => ({ kubeProxyReplacement: kpr, apiServer: url, device: { name: 'eth0', ip: ctx.ip }, ready: true }),
      agentContainer(this.a.pod, image),
    );
    this.health = serveHealth(ctx, join(root, HEALTH_SOCKET));
    mkdirSync(ctx.cniDir, { recursive: true });
    writeFileSync(join(ctx.cniDir, CNI_CONFLIST), CONFLIST);
    this.log('INFO', 'Wrote CNI configuration file', { module: 'agent.infra.cni-config', path: join('/etc/cni/net.d', CNI_CONFLIST) });
    this.log('INFO', 'Daemon initialization completed', { module: 'agent' });
    this.report({ ready: true });
    return true;
  }
}
