import { defineCauses } from './define.ts';

// bootstrap <env> --reset [--node NAME]: the cluster (or one node) taken down for good (phases/k3s/reset-*.ts).
export const resetCauses = defineCauses({
  RESET_NOT_CONFIRMED: {
    title: "The reset was not confirmed with the environment's name",
    meaning:
      "A reset stops k3s and removes it, Cilium's datapath and the cluster's data from the hosts for good, so it asks the operator to type the environment's name on the terminal first. What was typed was not that name (or the prompt was interrupted): nothing was dialled, nothing changed.",
    remedy:
      "Run it again and type the environment's name exactly, or pass --yes when the reset is meant (a script, CI). `--reset --check` lists what it would remove first.",
  },
});
