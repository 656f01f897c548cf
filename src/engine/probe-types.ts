// What a probe asks and what it answered: shared by the phase contract (phase.ts) and the run's memo of
// answers (probe-memo.ts), which the run's context carries.

/** One read-only remote command of a probe. Output is captured, never changes anything. */
export interface ProbeCommand {
  command: string;
  /** Needs root to read (e.g. files under /var/lib/rancher). */
  sudo?: boolean;
  /** Its output is a secret (a token, a kubeconfig): the run log records that it ran, never what it printed. */
  secret?: boolean;
  /**
   * A path of the Kubernetes API this probe GETs: `command` is then `k3s kubectl get --raw <path>` on a server
   * (src/k3s/remote.ts rawGetProbe), and a run that can reach the API through the host's SSH connection asks
   * there instead (RunContext.apiGet), with no process started on the host; the answer reads the same.
   */
  api?: string;
}

export interface ProbeResult {
  stdout: string;
  stderr: string;
  /** Exit status of the command (non-zero is data, not an error: "file absent" is exit 1 of test -f). */
  code: number | null;
  /**
   * The operator's clock (epoch ms) when the batch holding this probe was sent and when its answer came
   * back: whatever the host printed of its own clock was read between the two.
   */
  window?: { sentMs: number; answeredMs: number };
}

export type ProbeResults = Record<string, ProbeResult>;
