// The add-on twins a k3s server runs once its API serves (one call per server, from the k3s twin's
// startup): the DaemonSet controller + kubelet for this node's kube-vip and Cilium agent pods, the
// embedded helm-controller, the cilium-operator's status, Flux's controllers (once Flux is installed), the
// Deployment and disruption controllers for plain workloads (on the controller manager's leader), and the
// pods/log endpoint of the API.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddonContext } from './context.ts';
import { DaemonSetKubelet, inProcessRuntime } from './daemonsets.ts';
import { HelmController } from './helm/controller.ts';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { tlsPaths } from '../pki.ts';
import { ProcessRuntime } from '../runtime/process-runtime.ts';
import { daemonPrograms } from '../runtime/programs.ts';
import { updateOperatorStatus } from './cilium/operator.ts';
import { updateCoreDns } from './coredns.ts';
import { PodLogs } from './pod-logs.ts';
import { FluxControllers } from './flux/index.ts';
import { ControllerManager } from './controller-manager.ts';
import { registryReachable, startNodeImages } from '../runtime/images.ts';

export type { AddonContext } from './context.ts';

export interface Addons {
  /** Serves API paths the add-ons own (pods/<name>/log); false for every other request. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  stop(): Promise<void>;
}

export function startAddons(given: AddonContext): Addons {
  // K3S_TWIN_ADDON_ROOT (tests on one machine): files under that folder and the VIP recorded in a file
  // there, instead of the host's /etc/cni, /var/run, /var/log and NIC.
  const root = process.env.K3S_TWIN_ADDON_ROOT;
  const base: AddonContext = root ? { ...given, root, cniDir: join(root, 'etc/cni/net.d') } : given;
  const ctx: AddonContext = { ...base, images: startNodeImages(base.dataDir, registryReachable(root)) };
  // A pod on an agent: its log is asked of that node's kubelet, as kube-apiserver does (its
  // --kubelet-client-certificate; the twin presents its admin certificate, of the same client CA).
  const tls = tlsPaths(ctx.dataDir);
  const kubeletClient = () => ({ ca: readFileSync(tls.serverCA, 'utf8'), cert: readFileSync(tls.admin, 'utf8'), key: readFileSync(tls.adminKey, 'utf8') });
  const logs = new PodLogs(ctx.etcd, ctx.root ? `${ctx.root}/var/log/pods` : undefined, kubeletClient);
  // On a lab host each container is its own process that outlives k3s, as real pods do; tests on one
  // machine run the containers inside the twin (they end with it).
  const runtime = root ? inProcessRuntime : new ProcessRuntime(ctx);
  const kubelet = new DaemonSetKubelet(ctx, logs, daemonPrograms(root), runtime);
  const helm = new HelmController(ctx);
  const flux = new FluxControllers(ctx, logs);
  const controllers = new ControllerManager(ctx);
  kubelet.start();
  helm.start();
  flux.start();
  controllers.start();
  let stopped = false;
  const operator = async () => {
    await updateOperatorStatus(ctx).catch(() => undefined);
    await updateCoreDns(ctx).catch(() => undefined);
    if (!stopped) setTimeout(operator, 3000);
  };
  void operator();
  return {
    handle: (req, res) => logs.handle(req, res, ctx.store),
    stop: async () => {
      stopped = true;
      helm.stop();
      flux.stop();
      controllers.stop();
      await kubelet.stop();
      ctx.images?.stop();
      await logs.flush();
    },
  };
}
