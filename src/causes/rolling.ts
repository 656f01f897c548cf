import { defineCauses } from './define.ts';

// A rolling change on a running cluster (phases/k3s-rolling.ts): an upgrade or a configuration change that
// restarts k3s, one server at a time. QUORUM_AT_RISK is shared with --replace (replace.ts).
export const rollingCauses = defineCauses({
  K3S_DOWNGRADE_REFUSED: {
    title: 'k3s.version is older than what the cluster runs',
    meaning:
      'k3s supports upgrades only: an older release would start on a datastore written by a newer one. Refused before anything changed, in check mode too.',
    remedy:
      'Set k3s.version (and the binary in k3s.artifacts) back to what the servers run, or newer. To go back to an older release, restore the backup taken before the upgrade (runbooks/upgrade.md "Rolling back").',
  },
  K3S_MINOR_SKIPPED: {
    title: 'k3s.version skips a minor release',
    meaning:
      'k3s upgrades one minor release at a time (its upgrade documentation: the plan must not skip intermediate minor versions). The message names the releases to go through. Refused before anything changed.',
    remedy:
      'Upgrade through each minor release named in the message (the latest patch of each), one run per release, then to the one you want (runbooks/upgrade.md "The path rules").',
  },
  ETCD_WAYPOINT_REQUIRED: {
    title: 'The cluster must run etcd 3.5.26 or later before a release with etcd 3.6',
    meaning:
      "The target k3s release embeds etcd 3.6, and at least one server runs a k3s whose etcd is older than 3.5.26: etcd's 3.5 → 3.6 upgrade needs 3.5.26 first (k3s-io/k3s #13485). Refused before anything changed.",
    remedy:
      'Upgrade first to a k3s release of the running minor line that carries etcd 3.5.26 or later (its release notes name the etcd version), then to the target (runbooks/upgrade.md "The path rules").',
  },
  ETCD_VERSION_UNKNOWN: {
    title: 'The etcd version of a k3s binary cannot be read',
    meaning:
      "The etcd 3.5.26 waypoint is judged on the etcd each server runs (etcd's start line in k3s's journal, or the module information of the k3s binary on the host) and the etcd the target release embeds (k3s's release notes, as the tool carries them). One of them is not known, and it matters: a server may run an etcd older than 3.5.26. Refused before anything changed.",
    remedy:
      'Find the etcd version: on a server, `sudo journalctl -u k3s | grep etcd-version` shows the etcd k3s last started; a release\'s notes name the etcd it embeds. If the target release is too new for the tool to know, upgrade to a release it knows first (runbooks/upgrade.md "The path rules").',
  },
  K3S_VERSION_UNKNOWN: {
    title: 'A server does not say which k3s it runs',
    meaning: '`k3s --version` on a server that runs the cluster printed no `k3s version v…` line, so the step to the target release cannot be judged.',
    remedy: 'Run `sudo k3s --version` on the server named; reinstall the binary there if it is damaged (bootstrap --replace), then run again.',
  },
  RESTART_NEEDS_ROLLING: {
    title: 'A running node would restart outside the rolling change',
    meaning:
      "k3s runs on the host and its binary, configuration, unit or environment differs from the inventory's, so writing it restarts k3s. The run's phases (--from or --only past rolling-servers) leave out the rolling change, which drains such a node and restarts one at a time with quorum checked and gates after; the install phases would restart every changed node at once, undrained. Refused before anything was written, in check mode too: the next full run still finds the change and rolls it.",
    remedy:
      'Run the build with its rolling phases: `bootstrap <env>`, or `bootstrap <env> --from rolling-servers` (runbooks/upgrade.md "What it does, in order").',
  },
  ROLLING_SERVER_NOT_BACK: {
    title: 'A server did not come back after its rolling restart',
    meaning:
      'After the restart the server must serve the API, be an etcd voter again, the VIP must answer with the cluster CA and the Cilium agent on the node must be Ready. One of them was not so within its budget; the rolling change stopped before touching another server. The node stays cordoned.',
    remedy:
      'Read the evidence and the server\'s journal (`sudo journalctl -u k3s`); fix it, then `bootstrap <env> --resume` continues with this server\'s gates and the servers after it (runbooks/upgrade.md "Resuming").',
  },
});
