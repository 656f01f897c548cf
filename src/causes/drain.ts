import { defineCauses } from './define.ts';

// Draining a node through the Kubernetes eviction API (src/k3s/drain.ts), and the API calls it makes
// (src/kube/drain-client.ts). Every drain that stops uncordons the node again when this tool cordoned it.
export const drainCauses = defineCauses({
  DRAIN_BLOCKED: {
    title: 'A PodDisruptionBudget refused to let a pod leave the node within the drain budget',
    meaning:
      "The node was cordoned and its pods evicted through the eviction API, which honours PodDisruptionBudgets: the API answered 429 for the named pod until the drain's budget ran out, because the named budget allows no disruption now (too few healthy pods elsewhere, or a budget that allows none at all). The node was uncordoned again (unless it was cordoned before the drain began); the pods already evicted are not brought back.",
    remedy:
      'Look at the PodDisruptionBudget named (`kubectl -n NAMESPACE get pdb NAME -o yaml`: minAvailable or maxUnavailable, status.currentHealthy and desiredHealthy), make its pods healthy elsewhere, scale the workload up or relax the budget, then rerun with --resume.',
  },
  DRAIN_TIMEOUT: {
    title: 'Evicted pods did not leave the node within the drain budget',
    meaning:
      "Every eviction was accepted, but the named pods were still on the node (terminating) when the drain's budget ran out: a long terminationGracePeriodSeconds, a preStop hook or finalizer that does not finish, or a kubelet that does not report the pod gone. The node was uncordoned again (unless it was cordoned before the drain began).",
    remedy:
      'See why the pods named are still there (`kubectl -n NAMESPACE describe pod NAME`: its finalizers, terminationGracePeriodSeconds, events; `journalctl -u k3s` on the node), fix it or wait for them to go (a workload whose grace period is longer than the drain budget needs a larger k3s.drainSeconds), then rerun with --resume.',
  },
  KUBE_API_FAILED: {
    title: 'The Kubernetes API refused or failed a request of the drain',
    meaning:
      'A request of the drain (read or patch the Node, list its pods, evict a pod, read a pod) was answered with an unexpected HTTP status (the status and message are shown), or got no answer through the tunnel to the server. Retrying the same request cannot help until the reason is fixed.',
    remedy:
      'Read the HTTP status and message shown: 401 or 403 means the state folder kubeconfig does not belong to this cluster or lacks rights (run `bootstrap <env>` to fetch it again); no answer means the server the run tunnels through has no API on 127.0.0.1:6443 (`systemctl status k3s` there); then rerun with --resume.',
  },
});
