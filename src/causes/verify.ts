import { defineCauses } from './define.ts';

// verify: the read-only proof that the cluster is highly available, and the failover drill (phases/verify/*.ts).
export const verifyCauses = defineCauses({
  ETCD_MEMBERS_MISMATCH: {
    title: "etcd's voting members are not exactly the inventory's servers",
    meaning:
      'A server is not a voting member (absent, a learner, never started, or its EtcdIsVoter condition is False), or etcd lists a member that is no server of the inventory. Quorum is not what the inventory promises. The extra and missing members are named.',
    remedy:
      'Read the list on a server: sudo k3s kubectl get --raw /db/info. A missing server: restart k3s on it and read its journal. An extra member with a Node: sudo k3s kubectl delete node <name>; of no Node, once you are sure its host is gone: etcdctl member remove <id> (Debian etcd-client, with the client certificates under server/tls/etcd).',
  },
  NODE_NOT_IN_INVENTORY: {
    title: 'The cluster has a Node (and perhaps an etcd member) that the inventory does not list',
    meaning:
      "A Node object whose name is none of the inventory's servers and agents: a host retired from the inventory without being removed from the cluster, a host that joined by hand, or a name changed. Its kubelet may still run and take pods; a server's etcd member still counts toward quorum, so a dead one makes the cluster less tolerant than the inventory says. The Node, its etcd member when it has one, and when it last reported are named.",
    remedy:
      "If it belongs: add it to the inventory and rerun. If it is retired: on a server `sudo k3s kubectl drain <name> --ignore-daemonsets --delete-emptydir-data`, then `sudo k3s kubectl delete node <name>` (k3s's etcd finalizer removes a server's etcd member with its Node: `sudo k3s kubectl get --raw /db/info` stops listing it) and `sudo k3s kubectl -n kube-system delete secret <name>.node-password.k3s`; if the host still runs, stop and disable k3s (k3s-agent on an agent) there, or it registers again.",
  },
  API_UNREACHABLE_VIA: {
    title: 'The API is not ready through one of its addresses, seen from a server or the operator',
    meaning:
      "GET /readyz with the admin credentials failed through the named address (the VIP or a server's own address) from the named server, or the engine's TLS handshake to it (over its SSH connection to the founder) did not verify: that API server is down or unhealthy, or the path to it is blocked.",
    remedy:
      'On the server owning the address (the VIP: its lease holder): systemctl status k3s, journalctl -u k3s; from the vantage the evidence names: sudo k3s kubectl --server https://<address>:6443 get --raw /readyz.',
  },
  COREDNS_NOT_READY: {
    title: 'CoreDNS is not ready',
    meaning:
      'The Deployment kube-system/coredns is missing or has fewer ready replicas than it wants: in-cluster names do not resolve, so Flux and workloads fail.',
    remedy:
      'kubectl -n kube-system describe deployment coredns; kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide; check the CNI is up on their nodes.',
  },
  FAILOVER_FAILED: {
    title: 'The failover drill failed: the VIP did not move, or the stopped server did not come back',
    meaning:
      'With k3s stopped on the VIP holder, no other server answered on the VIP within the lease timing plus a margin, or the restarted server did not become an etcd voter again. The cluster is not highly available as built.',
    remedy:
      'Read the kube-vip logs from another server (the VIP may not answer): sudo k3s kubectl -n kube-system logs -l app.kubernetes.io/name=kube-vip-ds; on the stopped server systemctl status k3s. The drill restarts k3s itself; check it runs. A single-server inventory has no server to fail over to: the drill needs three.',
  },
});
