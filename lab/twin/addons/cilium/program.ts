// The Cilium agent (container cilium-agent of DaemonSet cilium), one per node, run inside the k3s twin as
// that node's pod. It reads its env as the pod got it: without KUBERNETES_SERVICE_HOST it dials the
// kubernetes Service's ClusterIP (kubelet's injected 10.43.0.1:443), which nothing routes before Cilium on
// a cluster without kube-proxy → Go's i/o timeout, logged as the agent does, never Ready, restarted with
// CrashLoopBackOff. With it, a TLS handshake verified against the cluster CA; on success the agent is
// Ready, writes its CNI config (/etc/cni/net.d/05-cilium.conflist — the k3s twin's Ready hook) and serves
// its status API on /var/run/cilium/cilium.sock.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN } from '../../api/resources.ts';
import type { DaemonProgram, Running, StartArgs } from '../daemonsets.ts';
import { slogLine } from '../logfmt.ts';
import { reachApi } from '../reach.ts';
import { agentContainer, serveStatus } from './status-api.ts';

const CONFIGMAPS = BUILTIN.find((x) => x.resource === 'configmaps')!;
const DIAL_TIMEOUT_MS = 10_000;
export const CNI_CONFLIST = '05-cilium.conflist';
export const CILIUM_SOCKET = '/var/run/cilium/cilium.sock';

/** What cilium's CNI installer writes (plugins/cilium-cni, cni.exclusive). */
export const CONFLIST = JSON.stringify({ cniVersion: '0.3.1', name: 'cilium', plugins: [{ type: 'cilium-cni', 'enable-debug': false, 'log-file': '/var/run/cilium/cilium-cni.log' }] }, null, 2) + '\n';

class Stopped extends Error {}

export function ciliumAgentContainer(ds: any): any | undefined {
  return (ds?.spec?.template?.spec?.containers ?? []).find((c: any) => c.name === 'cilium-agent');
}

export function ciliumAgentProgram(): DaemonProgram {
  return { name: 'cilium-agent', container: ciliumAgentContainer, start: (a) => new Agent(a).start() };
}

class Agent {
  private stopped = false;
  private wake?: () => void;
  private api?: { close(): void };

  constructor(private a: StartArgs) {}

  start(): Running {
    void this.supervise();
    return {
      stop: () => {
        this.stopped = true;
        this.wake?.();
        this.api?.close();
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
    this.a.log(slogLine(level, msg, attrs));
  }

  private async supervise(): Promise<void> {
    let restarts = 0;
    let backoff = 10_000;
    try {
      for (;;) {
        this.a.state({ ready: false, restartCount: restarts });
        if (await this.runOnce()) return;
        restarts++;
        this.a.state({ ready: false, restartCount: restarts, waiting: { reason: 'CrashLoopBackOff', message: `back-off ${backoff / 1000}s restarting failed container=cilium-agent pod=${this.a.pod.metadata.name}_${this.a.pod.metadata.namespace}(${this.a.pod.metadata.uid})` } });
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, 300_000);
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
      this.log('ERROR', 'Start hook failed', { ...mod, error: 'unable to create k8s client: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined' });
      return false;
    }
    const url = `https://${host}:${port}`;
    this.log('INFO', 'Establishing connection to apiserver', { ...mod, ipAddr: url });
    const r = await reachApi(host, Number(port), { caFile: ctx.caFile ?? join(ctx.dataDir, 'server', 'tls', 'server-ca.crt'), serviceCidr: ctx.serviceCidr, timeoutMs: DIAL_TIMEOUT_MS });
    if (this.stopped) throw new Stopped();
    if (!r.ok) {
      const err = `Get "${url}/api/v1/namespaces/kube-system": ${r.error}`;
      this.log('ERROR', 'Unable to contact k8s api-server', { ...mod, ipAddr: url, error: err });
      this.log('ERROR', 'Start hook failed', { module: 'agent', error: `unable to contact k8s api-server: ${err}` });
      return false;
    }
    this.log('INFO', 'Connected to apiserver', mod);
    const cm = await ctx.store.tryGet(CONFIGMAPS, this.a.pod.metadata.namespace, 'cilium-config').catch(() => undefined);
    const kpr = cm?.data?.['kube-proxy-replacement'] === 'true' ? 'True' : 'False';
    const root = ctx.root ?? '/';
    const image = ciliumAgentContainer({ spec: { template: { spec: this.a.pod.spec } } })?.image ?? '';
    this.api = serveStatus(join(root, CILIUM_SOCKET), () => ({ kubeProxyReplacement: kpr, apiServer: url, device: { name: 'eth0', ip: ctx.ip }, ready: true }), agentContainer(this.a.pod, image));
    mkdirSync(ctx.cniDir, { recursive: true });
    writeFileSync(join(ctx.cniDir, CNI_CONFLIST), CONFLIST);
    this.log('INFO', 'Wrote CNI configuration file', { module: 'agent.infra.cni-config', path: join('/etc/cni/net.d', CNI_CONFLIST) });
    this.log('INFO', 'Daemon initialization completed', { module: 'agent' });
    this.a.state({ ready: true });
    return true;
  }
}
