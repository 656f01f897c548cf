import { defineCauses } from './define.ts';

// Causes raised by the engine itself (applying plans, locks, interruption), not by a phase's gates.
export const engineCauses = defineCauses({
  GATE_FAILED: {
    title: 'A gate stopped the run for a reason it could not name',
    meaning: 'A check failed and what was seen matched no known cause. The evidence shows what was seen.',
    remedy: 'Read the evidence and the run log; if this repeats, add a named cause for it.',
  },
  GATE_LOOK_HUNG: {
    title: "A gate's look at a host did not come back within the gate's budget",
    meaning:
      'A gate runs commands on a host (probes, an exec into a container, k3s kubectl) and waits for their answers. When its budget and grace ran out, a command it had started there was still running with no answer: the host, or the program the command asks (the container runtime, the API server, etcd), stopped answering. The evidence names the command, the host and how long it had run.',
    remedy:
      'Run the command from the evidence by hand on the named host (it only reads) and see where it stops; check the host (uptime, journalctl -p err -b) and the service it asks (systemctl status k3s or k3s-agent); then rerun with --resume.',
  },
  PROBE_FAILED: {
    title: 'A read-only probe could not run on the host',
    meaning: 'The batch of read-only commands for a phase did not complete (connection lost, or it exceeded its budget).',
    remedy: 'Check the host is reachable and not overloaded (evidence shows the output so far), then rerun with --resume.',
  },
  APPLY_FAILED: {
    title: 'A planned change failed on the host',
    meaning: 'A command or file write from the plan exited non-zero or did not finish within its budget.',
    remedy: 'Read the command and its output in the evidence; fix the cause on the host, then rerun with --resume.',
  },
  LOCK_HELD: {
    title: 'Another bootstrap run holds the lock on this host',
    meaning: 'Another run (its id and user are in the evidence) holds the lock and refreshed it within the stale limit (10 minutes, host clock).',
    remedy: 'Wait for the other run to finish; a lock its dead run stops refreshing is taken over after 10 minutes, with a warning.',
  },
  LOCK_LOST: {
    title: 'Another run took over the lock this run held',
    meaning:
      "A refresh of this run's owner record found another run's record in its place (or none): this run was judged dead (its record not refreshed for 10 minutes, host clock: a suspended laptop, a frozen connection) and taken over. It stopped at once rather than go on beside the other run; it left the journal and the other run's lock alone.",
    remedy: 'Let the other run finish (sudo cat /run/lock/bootstrap.lock/owner names it), then rerun with --resume.',
  },
  STATE_FILE_CORRUPT: {
    title: 'A state file on the operator machine cannot be read',
    meaning:
      'A file in the environment state folder (the journal, the cluster token, the kubeconfig or a backup manifest) is torn or is not what the tool wrote, so the run cannot rely on it.',
    remedy:
      'Restore the named file from a backup of the state folder (the token: from a backup made with bootstrap backup); a journal may be deleted, and the run then redoes every phase; a kubeconfig is written again, whole, by the next run (bootstrap <env>).',
  },
  INTERRUPTED: {
    title: 'The run was interrupted (Ctrl-C)',
    meaning: 'The operator asked to stop. The current command was cancelled, the journal records what finished, and the locks were released.',
    remedy: 'Rerun with --resume to continue after the last completed step.',
  },
});
