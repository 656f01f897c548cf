import { defineCauses } from './define.ts';

// bootstrap <env> --remove NAME[,NAME…]: nodes leave the cluster (phases/k3s/remove-*.ts). QUORUM_AT_RISK,
// ETCD_MEMBER_NOT_REMOVED (replace.ts) and SERVER_COUNT_EVEN (inventory.ts) are shared with it.
export const removeCauses = defineCauses({
  NODE_NOT_REMOVED: {
    title: "A removed node's Node or node-password Secret is still there",
    meaning:
      "The node's Node was deleted normally (never forced) through a surviving server, but the Node or its node-password Secret (kube-system/<node>.node-password.k3s, which k3s deletes with the Node) did not go within the budget. A node of that name could not join again while the Secret stays.",
    remedy:
      'Read the evidence (sudo k3s kubectl get node <node> and sudo k3s kubectl get secret -n kube-system <node>.node-password.k3s on a surviving server), fix what holds the Node (a finalizer, the API) and run the same --remove again.',
  },
});
