import { defineCauses } from './define.ts';

// kube-vip: the control-plane VIP that Cilium and agents dial (phases/kube-vip/*.ts).
export const kubeVipCauses = defineCauses({
  VIP_INTERFACE_INVALID: {
    title: 'kube-vip has no valid interface to announce the VIP on',
    meaning:
      "kube-vip's vip_interface is one value for the whole DaemonSet: the servers' NICs on the node network differ (or one has none), or kube-vip logged that the interface is not valid / has no default route.",
    remedy:
      'Set controlPlane.interface to the NIC name every server uses on network.nodeCidr (rename NICs so they agree), or fix the interface named in the log.',
  },
  KUBE_VIP_RBAC_MISSING: {
    title: 'kube-vip may not read or write its leader-election Lease',
    meaning:
      'kube-vip logged `leases.coordination.k8s.io "plndr-cp-lock" is forbidden` (get or update) or `leases.coordination.k8s.io is forbidden` (create: the apiserver names no object): the ServiceAccount, ClusterRole or binding is missing or altered.',
    remedy:
      'Restore the RBAC objects in the kube-vip manifest (rerun bootstrap; it rewrites the auto-deploy file) and check no one deleted system:kube-vip-role/-binding.',
  },
  KUBE_VIP_SERVICE_HOST_DEADLOCK: {
    title: 'kube-vip dials the Kubernetes ClusterIP, which nothing routes before Cilium',
    meaning:
      'kube-vip logged an i/o timeout to the `kubernetes` ClusterIP (the first address of k3s.serviceCidr, 10.43.0.1 by default) on port 443: it runs without KUBERNETES_SERVICE_HOST=127.0.0.1 / KUBERNETES_SERVICE_PORT=6443, so it waits for the CNI that waits for the VIP.',
    remedy:
      'Use the DaemonSet bootstrap renders (KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=6443 set: rerun bootstrap); if another kube-vip manifest exists in the auto-deploy folder or the cluster, remove it.',
  },
  VIP_LEASE_NOT_HELD: {
    title: 'No kube-vip instance holds the control-plane lease',
    meaning:
      'The Lease kube-system/plndr-cp-lock has no holder within the budget, so no server announces the VIP. The kube-vip pod log excerpt is the evidence.',
    remedy:
      'Read the excerpt; on a server (the VIP does not answer without a holder) check the kube-vip pods run on the servers: `sudo k3s kubectl -n kube-system get pods -l app.kubernetes.io/name=kube-vip-ds -o wide`. A holder that is no server of the inventory is another kube-vip announcing the VIP: remove it.',
  },
  VIP_NOT_ANSWERING: {
    title: 'The VIP lease is held, but the VIP does not answer on the API port',
    meaning:
      "A server holds plndr-cp-lock, yet the VIP does not answer with the cluster certificate from a server (a GET of /livez through it, from the server's network: the engine's through its SSH connection, or k3s kubectl there) or from the operator's side (the engine's TLS over the SSH connection to the founder): ARP does not reach, a firewall drops, or the VIP is on the wrong NIC.",
    remedy:
      'On the holder: `ip -4 addr` shows the VIP on the right NIC; from the failing server `sudo k3s kubectl --server https://<vip>:6443 get --raw /livez` (from an agent, which has no admin kubeconfig: `timeout 3 bash -c "</dev/tcp/<vip>/6443" && echo open`) and `ip neigh show <vip>`; check firewalls.',
  },
  VIP_CERT_MISSING_SAN: {
    title: "The API server's certificate does not name the VIP",
    meaning: "The VIP answers, but the serving certificate's SANs lack it, so every client verifying TLS (Cilium, agents, kubectl) refuses.",
    remedy: "The VIP is in every server's tls-san (bootstrap renders it); restart k3s on each server so it reissues the serving certificate, then rerun.",
  },
});
