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
  api?: string | ApiReads;
}

/**
 * A probe's reads of the API when its command's output is not one raw body: the GETs, and how their answers
 * read as what the command prints, so that the probe's parser takes either. `table`: the GET asks for the
 * server-side Table (meta.k8s.io/v1) whose rows carry each object's metadata only (`includeObject=Metadata`,
 * kubernetes/apimachinery pkg/apis/meta/v1 types.go TableOptions): a Secret's data never leaves the server.
 */
export interface ApiReads {
  gets: { path: string; table?: boolean }[];
  /** What the command prints, from each GET's JSON (in `gets` order; every one answered 200). */
  print: (bodies: any[]) => string;
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
