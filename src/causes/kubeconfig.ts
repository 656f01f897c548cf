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
  KUBECONFIG_MERGE_REFUSED: {
    title: "The operator's kubeconfig already has another cluster under that name, or is not a kubeconfig",
    meaning:
      'A context, cluster or user of the name to merge under exists in the target file and belongs to another cluster (another CA), or the file cannot be read as a kubeconfig. Nothing was written.',
    remedy:
      'Merge under another name (`--context NAME`) or into another file (`--output FILE`), or remove the old entries (`kubectl config delete-context NAME`, `delete-cluster`, `delete-user`) if that cluster is gone.',
  },
});
