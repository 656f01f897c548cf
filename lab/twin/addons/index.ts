// The add-on twins a k3s server runs once its API serves (one call per server, from the k3s twin's
// startup): the DaemonSet controller + kubelet for this node's kube-vip and Cilium agent pods, the
// embedded helm-controller, the cilium-operator's status, and the pods/log endpoint of the API.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddonContext } from './context.ts';
import { DaemonSetKubelet } from './daemonsets.ts';
import { HelmController } from './helm/controller.ts';
import { kubeVipProgram } from './kube-vip/program.ts';
import { ciliumAgentProgram } from './cilium/program.ts';
import { updateOperatorStatus } from './cilium/operator.ts';
import { PodLogs } from './pod-logs.ts';

export type { AddonContext } from './context.ts';

export interface Addons {
  /** Serves API paths the add-ons own (pods/<name>/log); false for every other request. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  stop(): Promise<void>;
}

export function startAddons(ctx: AddonContext): Addons {
  const logs = new PodLogs(ctx.etcd, ctx.root ? `${ctx.root}/var/log/pods` : undefined);
  const kubelet = new DaemonSetKubelet(ctx, logs, [kubeVipProgram(), ciliumAgentProgram()]);
  const helm = new HelmController(ctx);
  kubelet.start();
  helm.start();
  let stopped = false;
  const operator = async () => {
    await updateOperatorStatus(ctx).catch(() => undefined);
    if (!stopped) setTimeout(operator, 3000);
  };
  void operator();
  return {
    handle: (req, res) => logs.handle(req, res, ctx.store),
    stop: async () => {
      stopped = true;
      helm.stop();
      await kubelet.stop();
      await logs.flush();
    },
  };
}
