import { defineCauses } from './define.ts';

// Causes of `bootstrap kubeconfig`: the operator's copy of the admin kubeconfig and merging it.
export const kubeconfigCauses = defineCauses({
  KUBECONFIG_NOT_FETCHED: {
    title: 'The state folder holds no kubeconfig for this environment yet',
    meaning:
      "A build writes the admin kubeconfig (dialling the VIP) to the environment's state folder once the founder's API answers; no run from this state folder has got that far.",
    remedy:
      'Build the cluster from this state folder (`bootstrap <env>`, or `--until k3s-founder`), or point BOOTSTRAP_STATE_DIR at the state folder of the run that built it.',
  },
  KUBECONFIG_CA_MISMATCH: {
    title: "The state folder's kubeconfig is another cluster's: its CA verifies no server's certificate",
    meaning:
      "Every server's API (its 127.0.0.1:6443, through the run's SSH connection) presented a serving certificate that the certificate authority in the state folder's kubeconfig does not verify. k3s signs every server's serving certificate with the cluster's one CA, so the kubeconfig was fetched from another cluster: the run reads another environment's state folder, or this environment's cluster was built again from another one. Nothing read through it could be trusted; the run stops at once instead of waiting for an API that answers.",
    remedy:
      "Run with this environment's state folder (BOOTSTRAP_STATE_DIR). If this is it and the cluster was built again elsewhere, bring that run's state folder here (its cluster-token.json and kubeconfig); to see the two differ, compare the founder's /var/lib/rancher/k3s/server/tls/server-ca.crt (sudo cat) with the kubeconfig's certificate-authority-data (base64 -d).",
  },
  KUBECONFIG_MERGE_REFUSED: {
    title: "The operator's kubeconfig already has another cluster under that name, or is not a kubeconfig",
    meaning:
      'A context, cluster or user of the name to merge under exists in the target file and belongs to another cluster (another CA), or the file cannot be read as a kubeconfig. Nothing was written.',
    remedy:
      'Merge under another name (`--context NAME`) or into another file (`--output FILE`), or remove the old entries (`kubectl config delete-context NAME`, `delete-cluster`, `delete-user`) if that cluster is gone.',
  },
});
