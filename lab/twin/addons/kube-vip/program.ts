// kube-vip in control-plane ARP mode (`manager`), one per server, run inside the k3s twin as that node's
// pod: reads its env from the pod spec, checks its interface, elects a leader on the Lease through the API
// at KUBERNETES_SERVICE_HOST:PORT (reachability and RBAC as that ServiceAccount are checked for real;
// the lease itself is read and written in the datastore), the leader adds the VIP and sends gratuitous ARP,
// a follower removes it. Log lines are kube-vip's (slog) and client-go's leaderelection (klog).
import { BUILTIN } from '../../api/resources.ts';
import { ApiError } from '../../api/status.ts';
import { join } from 'node:path';
import type { DaemonProgram, Running, StartArgs } from '../daemonsets.ts';
import { klogLine, slogLine } from '../logfmt.ts';
import { reachApi } from '../reach.ts';
import { allowed, forbiddenMessage, type Request } from '../rbac.ts';
import { kubeVipConfig, type KubeVipConfig } from './config.ts';
import { Elector, LeaseStepError, type LeaseIO, type LeaseSpec } from './election.ts';
import { hostNet, type NetOps } from './net.ts';

const KUBE_VIP_VERSION = 'v0.9.2';
const LEASES = BUILTIN.find((x) => x.resource === 'leases')!;
/** Go's dial timeout as client-go meets it; shortened from 30 s so a lab test sees the line sooner. */
const DIAL_TIMEOUT_MS = 10_000;

class Stopped extends Error {}

export function kubeVipContainer(ds: any): any | undefined {
  return (ds?.spec?.template?.spec?.containers ?? []).find((c: any) => /kube-vip/.test(c.image ?? '') && (c.args ?? []).includes('manager'));
}

export function kubeVipProgram(net: NetOps = hostNet): DaemonProgram {
  return { name: 'kube-vip', container: kubeVipContainer, start: (a) => new KubeVip(a, net).start() };
}

class KubeVip {
  private stopped = false;
  private wake?: () => void;
  private cfg: KubeVipConfig;
  private vipCidr: string;
  private holdingVip = false;
  /** The `ip addr add` in flight, if any: a stop waits for it, or the address would land after the pod is gone. */
  private adding?: Promise<void>;
  /** The `ip addr del` in flight, if any: whoever asks for a release while it runs waits for the same one. */
  private releasing?: Promise<void>;
  /** The running election, so that a stop can release the lease (ReleaseOnCancel). */
  private elector?: Elector;
  private onExit = () => {
    if (this.holdingVip) this.net.deleteAddressNow(this.vipCidr, this.cfg.interfaceName);
  };

  constructor(
    private a: StartArgs,
    private net: NetOps,
  ) {
    this.cfg = kubeVipConfig(a.env, a.ctx.node);
    this.vipCidr = `${this.cfg.address}/${this.cfg.subnet}`;
  }

  start(): Running {
    process.on('exit', this.onExit);
    void this.supervise();
    return {
      stop: async () => {
        this.stopped = true;
        this.wake?.();
        // An add still running when the pod goes ends first; then the VIP goes with the process.
        await this.adding?.catch(() => undefined);
        await this.releaseVip();
        process.off('exit', this.onExit);
        // The pod is going (deleted, its node drained): hand the lease over at once, as ReleaseOnCancel does.
        await this.elector?.release().catch((e: Error) => this.a.log(klogLine('E', 'leaderelection.go', `Failed to release lock: ${e.message}`)));
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

  private info(msg: string, attrs?: Record<string, string | number | boolean>) {
    this.a.log(slogLine('INFO', msg, attrs));
  }

  /** The container and kubelet's restart policy: every exit is a restart, with CrashLoopBackOff's delays. */
  private async supervise(): Promise<void> {
    let restarts = 0;
    let backoff = 10_000;
    try {
      for (;;) {
        this.a.state({ ready: true, restartCount: restarts });
        await this.runOnce();
        await this.releaseVip();
        restarts++;
        this.a.state({
          ready: false,
          restartCount: restarts,
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off ${backoff / 1000}s restarting failed container=kube-vip pod=${this.a.pod.metadata.name}_${this.a.pod.metadata.namespace}(${this.a.pod.metadata.uid})`,
          },
        });
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, 300_000);
      }
    } catch (e) {
      if (!(e instanceof Stopped)) this.a.log(slogLine('ERROR', 'unexpected', { err: (e as Error).message }));
    }
  }

  /** One life of the kube-vip process; returns when it exits. */
  private async runOnce(): Promise<void> {
    const c = this.cfg;
    this.info(`Starting kube-vip.io [${KUBE_VIP_VERSION}]`);
    this.info(`namespace [${c.namespace}], Mode: [ARP], Features(s): Control Plane:[${c.controlPlane}], Services:[${this.a.env.svc_enable === 'true'}]`);
    if (!c.interfaceName) {
      // kube-vip/kube-vip v0.9.2 cmd/kube-vip.go (manager) and pkg/vip/util.go GetDefaultGatewayInterface.
      this.info('No interface is specified for VIP in config, auto-detecting default Interface');
      const dflt = await this.net.defaultRouteInterface();
      if (!dflt) {
        this.a.log(slogLine('ERROR', 'detecting interface', { err: 'Unable to find default route' }));
        return;
      }
      this.info('kube-vip bind', { interface: dflt });
      c.interfaceName = dflt;
    } else if (!(await this.net.linkExists(c.interfaceName))) {
      this.a.log(
        slogLine('ERROR', 'checking interface', {
          err: `${c.interfaceName} is not valid interface, reason: get ${c.interfaceName} failed, error: Link not found`,
        }),
      );
      return;
    }
    if (!c.controlPlane) {
      for (;;) await this.sleep(60_000);
    }
    this.info('Starting Kube-vip Manager with the ARP engine');
    this.info(`beginning services leadership, namespace [${c.namespace}], lock name [${c.leaseName}], id [${c.nodeName}]`);
    // A follower starts without the VIP (it may be left over from before a restart).
    await this.net.deleteAddress(this.vipCidr, c.interfaceName);
    if (!c.leaderElection) {
      await this.lead();
      for (;;) await this.sleep(60_000);
    }
    await this.elect();
  }

  private leaseIO(): LeaseIO {
    const { store } = this.a.ctx;
    const c = this.cfg;
    const sa = { namespace: this.a.pod.metadata.namespace, name: this.a.pod.spec?.serviceAccountName || 'default' };
    const check = async (verb: string) => {
      const r = await reachApi(c.apiHost, c.apiPort, {
        caFile: join(this.a.ctx.dataDir, 'server', 'tls', 'server-ca.crt'),
        serviceCidr: this.a.ctx.serviceCidr,
        timeoutMs: DIAL_TIMEOUT_MS,
      });
      const path = `/apis/coordination.k8s.io/v1/namespaces/${c.namespace}/leases${verb === 'create' ? '' : `/${c.leaseName}`}`;
      const method = verb === 'get' ? 'Get' : verb === 'create' ? 'Post' : 'Put';
      if (!r.ok) throw new Error(`${method} "https://${c.apiHost}:${c.apiPort}${path}?timeout=${c.renewDeadlineS}s": ${r.error}`);
      const q: Request = { verb, group: 'coordination.k8s.io', resource: 'leases', namespace: c.namespace, name: verb === 'create' ? undefined : c.leaseName };
      if (!(await allowed(store, sa, q))) throw new Error(forbiddenMessage(sa, q));
    };
    const obj = (spec: LeaseSpec, rv?: string) => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: c.leaseName, namespace: c.namespace, ...(rv ? { resourceVersion: rv } : {}) },
      spec,
    });
    return {
      get: async () => {
        await check('get');
        const l = await store.tryGet(LEASES, c.namespace, c.leaseName);
        return l ? { spec: l.spec ?? {}, resourceVersion: l.metadata.resourceVersion } : undefined;
      },
      create: async (spec) => {
        await check('create');
        await store.create(LEASES, c.namespace, obj(spec));
      },
      update: async (spec, rv) => {
        await check('update');
        await store.update(LEASES, c.namespace, c.leaseName, obj(spec, rv), { expectedRV: rv });
      },
    };
  }

  private async elect(): Promise<void> {
    const c = this.cfg;
    const lock = `${c.namespace}/${c.leaseName}`;
    const elector = new Elector(this.leaseIO(), c.nodeName, c.leaseDurationS);
    this.elector = elector;
    const attempt = async (): Promise<boolean | Error> => {
      try {
        return await elector.tryAcquireOrRenew();
      } catch (e) {
        return e instanceof ApiError || e instanceof Error ? e : new Error(String(e));
      }
    };
    // client-go's words for the call that failed (kubernetes/client-go v0.32.3 tools/leaderelection/leaderelection.go).
    const failed = (e: Error) => {
      const s = e instanceof LeaseStepError ? e.step : 'get';
      if (s === 'create') this.a.log(klogLine('E', 'leaderelection.go:440', `error initially creating leader election record: ${e.message}`));
      else if (s === 'update') this.a.log(klogLine('E', 'leaderelection.go:472', `Failed to update lock: ${e.message}`));
      else this.a.log(klogLine('E', 'leaderelection.go:436', `error retrieving resource lock ${lock}: ${e.message}`));
    };
    this.a.log(klogLine('I', 'leaderelection.go:257', `attempting to acquire leader lease ${lock}...`));
    let leader = '';
    for (;;) {
      const r = await attempt();
      if (r instanceof Error) failed(r);
      else if (r) break;
      const seen = elector.holder();
      if (seen && seen !== leader) {
        leader = seen;
        this.info(`Node [${seen}] is assuming leadership of the cluster`);
      }
      await this.sleep(c.retryPeriodS * 1000);
    }
    this.a.log(klogLine('I', 'leaderelection.go:271', `successfully acquired lease ${lock}`));
    this.info(`Node [${c.nodeName}] is assuming leadership of the cluster`);
    await this.lead();
    // Renew every retryPeriod; leadership is lost when no renewal succeeded for renewDeadline.
    let lastRenew = Date.now();
    for (;;) {
      await this.sleep(c.retryPeriodS * 1000);
      const r = await attempt();
      if (r === true) lastRenew = Date.now();
      else if (r instanceof Error) failed(r);
      if (r === false || Date.now() - lastRenew > c.renewDeadlineS * 1000) {
        this.a.log(klogLine('I', 'leaderelection.go:297', `failed to renew lease ${lock}: context deadline exceeded`));
        // OnStoppedLeading (kube-vip v0.9.2 pkg/cluster/clusterLeaderElection.go): the VIP goes, then a panic
        // ends the process (the kubelet restarts it).
        await this.releaseVip();
        this.a.log(slogLine('ERROR', 'lost leadership, restarting kube-vip'));
        return;
      }
    }
  }

  /** OnStartedLeading: the VIP on the interface, then gratuitous ARP every 3 s (kube-vip's vip_arpRate). */
  private async lead(): Promise<void> {
    const c = this.cfg;
    if (this.stopped) throw new Stopped();
    this.adding = this.net.addAddress(this.vipCidr, c.interfaceName).then(() => {
      this.holdingVip = true;
    });
    try {
      await this.adding;
    } catch (e) {
      this.a.log(slogLine('ERROR', 'could not add VIP', { address: this.vipCidr, interface: c.interfaceName, err: (e as Error).message }));
      return;
    } finally {
      this.adding = undefined;
    }
    // Stopped while the address was being added: stop() found nothing to release, so it goes here (stop() waits
    // for the add, then for this release), and no VIP outlives its kube-vip, as in the stop path above.
    if (this.stopped) {
      await this.releaseVip();
      throw new Stopped();
    }
    if (!c.arp) return;
    this.info('[ARP manager] starting ARP/NDP advertisement');
    this.info(`Gratuitous Arp broadcast will repeat every 3000 ms for [${c.address}/${c.interfaceName}]`);
    void this.net.gratuitousArp(c.interfaceName, c.address, 3);
    const again = () => {
      if (!this.holdingVip || this.stopped) return;
      void this.net.gratuitousArp(c.interfaceName, c.address, 1);
      setTimeout(again, 3000);
    };
    setTimeout(again, 3000);
  }

  private releaseVip(): Promise<void> {
    if (this.holdingVip) {
      this.holdingVip = false;
      this.info('This node is becoming a follower within the cluster');
      this.releasing = this.net.deleteAddress(this.vipCidr, this.cfg.interfaceName).then(() => {
        this.info('deleted address', { IP: this.cfg.address, interface: this.cfg.interfaceName });
      });
    }
    return this.releasing ?? Promise.resolve();
  }
}
