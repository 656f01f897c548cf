// AGENT_SERVICE_HOST_DRIFT, from the running agent pods (read live, not from the template: the drift the
// operator's tests could not see). Pure: the gate lists the pods of DaemonSet cilium and passes them here.
import { CauseError } from '../errors.ts';

export interface AgentPod {
  name: string;
  node?: string;
  /** The cilium-agent container's env as name → value (valueFrom entries left out). */
  env: Record<string, string>;
}

/** `kubernetesIp`: the `kubernetes` Service's ClusterIP, what kubelet injects when the spec sets no host. */
export function checkAgentServiceHost(pods: AgentPod[], vip: string, port: number, kubernetesIp: string): CauseError[] {
  return pods.flatMap((p) => {
    const host = p.env.KUBERNETES_SERVICE_HOST;
    const svcPort = p.env.KUBERNETES_SERVICE_PORT;
    if (host === vip && (svcPort === undefined || svcPort === String(port))) return [];
    const seen =
      host === undefined
        ? `agent ${p.name} has no KUBERNETES_SERVICE_HOST: it dials the ClusterIP ${kubernetesIp}, not the VIP ${vip}`
        : host !== vip
          ? `agent ${p.name} dials ${host}, not the VIP ${vip}`
          : `agent ${p.name} dials the VIP on port ${svcPort}, not ${port}`;
    return [
      new CauseError('AGENT_SERVICE_HOST_DRIFT', {
        host: p.node,
        evidence: { command: `kubectl -n kube-system get pod ${p.name} -o jsonpath='{.spec.containers[0].env}'`, seen },
      }),
    ];
  });
}
