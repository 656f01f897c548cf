import { defineCauses } from './define.ts';

// bootstrap <env> --replace <server>: a dead or reinstalled server deleted and joined again (phases/k3s/replace-*.ts).
export const replaceCauses = defineCauses({
  QUORUM_AT_RISK: {
    title: 'The other servers do not hold etcd quorum',
    meaning:
      'Replacing a server (deleting a member, joining a new one) and restarting one in a rolling change both need a majority of the etcd members answering without it. Too few of the other servers have a ready API and a started voting member (or a member is still a learner), so going on could stop the cluster. Refused before anything on the server changed.',
    remedy:
      'Bring the other servers back (bootstrap verify <env> names which are down) and run again (a rolling change: --resume); if a majority is lost for good, restore from a backup instead (runbooks/dr-restore.md).',
  },
  ETCD_MEMBER_NOT_REMOVED: {
    title: "The replaced server's Node or etcd member is still there",
    meaning:
      "Its Node was deleted normally (never forced) so that k3s's finalizer removes its etcd member, but the Node or the member did not go within the budget, or a member of that server is left without a Node. Joining again under the same name would be refused as a duplicate.",
    remedy:
      'Read the evidence (sudo k3s kubectl get node and sudo k3s kubectl get --raw /db/info on a surviving server), fix what keeps the finalizer from finishing (etcd health), then run the replace again.',
  },
});
