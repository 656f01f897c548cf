// The lab fault matrix as data: each row is one fault, the moment of a run it is injected at, the cause the
// run must stop with (naming the host), the budget that stop must come within, and the heal after which a
// rerun must pass with nothing lost. Pure: test/lab/fault-matrix.test.ts runs the rows on the shared lab,
// and README.md's "Failure handling" table is rendered from them (test/unit/fault-matrix-readme.test.ts
// keeps the two equal). Budgets are the engine's and the phases' own constants, never copied numbers.
import type { CauseId } from '../../src/causes/catalogue.ts';
import { LOCK_ACQUIRE_BUDGET_MS } from '../../src/engine/lock.ts';
import { PROBE_BUDGET_MS } from '../../src/engine/probes.ts';
import { connectBudgetMs, lostConnectionBudgetMs } from '../../src/transport/ssh.ts';
import { apiReady, corednsReady } from '../../phases/verify/checks.ts';
import { joinerIsVoter, START_PRE_LIMIT_MS } from '../../phases/k3s/gates.ts';
import { FLUX_POLL_MAX_MS } from '../../phases/flux/ready-wait.ts';
import { ciliumRolledOut } from '../../phases/cilium/rollout-gate.ts';
import { vipAnswers } from '../../phases/kube-vip/vip-gate.ts';
import { agentRegistered } from '../../phases/k3s/agent-gate.ts';
import { ciliumAgentsLive } from '../../phases/verify/checks.ts';
import { backAfterRestart } from '../../phases/k3s/rolling-gates.ts';
import { QUORUM_CHECK_BUDGET_MS } from '../../phases/k3s/rolling-drain.ts';

/**
 * The drain budget (k3s.drainSeconds) the upgrade-drain-blocked row's inventory sets: the stop it waits for comes
 * at the budget's end whatever its length, so the row needs no three minutes of the default to prove it.
 */
export const DRAIN_ROW_SECONDS = 30;

/**
 * When the fault goes in. `before`: before the run starts, for what the run reads first (its state folder,
 * its connections); the clock starts at the run's first event. Otherwise at the first event of that type
 * (and phase/gate, when given): the run is frozen (SIGSTOP) at that event while the fault goes in and
 * resumed (SIGCONT) once it is in place, so the fault lands exactly there and the clock starts at the resume.
 */
type Trigger =
  | { at: 'before' }
  | { at: 'run-start' }
  | { at: 'phase-start'; phase: string }
  | { at: 'step-start'; phase: string; step: string; host?: string }
  | { at: 'gate-start'; gate: string; host?: string };

export interface FaultRow {
  id: string;
  /** What breaks, in words. */
  fault: string;
  /** When it hurts, in words. */
  moment: string;
  trigger: Trigger;
  /**
   * The bootstrap arguments of the run that meets the fault (and of the rerun after the heal); a `<name>`
   * placeholder (`<backup>`) is filled by the file that runs the row (FaultEnv.values).
   */
  args: string[];
  /** Arguments of the rerun when they differ. */
  rerunArgs?: string[];
  cause: CauseId;
  /** The host the stop names. */
  host: string;
  /** The budget the stop must come within (plus 2 s), and which constant it is. */
  budgetMs: number;
  budget: string;
  /** The gate whose start the budget is counted from (a gate that starts after the fault went in). */
  budgetFromGate?: string;
  /** What the stop's evidence must say it saw, when the cause alone does not show the fault was recognised. */
  seen?: RegExp;
  heal: string;
  /**
   * The lab test file that runs the row, when it is not test/lab/fault-matrix.test.ts: a fault whose moment
   * needs a cluster shape or a run of its own (a restore behind the bastion, Flux) rides on the file that
   * builds that anyway, instead of the matrix building it again.
   */
  file?: string;
}

const S2 = 'k3s-lab-2';
const S3 = 'k3s-lab-3';
const AGENT = 'k3s-lab-agent-1';
const BASELINE = ['--only', 'node-baseline', '--json'];
const VERIFY = ['--only', 'verify', '--json'];
const JOIN = ['--only', 'k3s-join', '--json'];
/** The moment k3s-lab-3, taken back to "never joined" by the row's setup, has k3s started to join. */
/**
 * verify's first looks go out with the run's probes, beside its locks (phases/verify.ts lookAhead): a fault meant
 * for a check goes in before, as the run starts.
 */
const VERIFY_LOOKS: Trigger = { at: 'run-start' };
const S3_STARTS_K3S: Trigger = { at: 'step-start', phase: 'k3s-join', step: 'service', host: S3 };
const CONNECT = connectBudgetMs();
// Rows that wait out a connection's whole budget run a phase that needs the host and prepares nothing slow
// before the connections (node-baseline runs the k3s binary for its version first; verify needs only the
// founder), so the clock from the run's first event is the connections' own.

export const FAULT_ROWS: FaultRow[] = [
  {
    id: 'token-torn',
    fault: "the state folder's cluster-token.json torn (half written)",
    moment: 'a join reads the token',
    trigger: { at: 'before' },
    args: ['--only', 'k3s-join', '--json'],
    cause: 'TOKEN_MALFORMED',
    host: '-',
    budgetMs: CONNECT,
    budget: 'the connections (connectBudgetMs)',
    heal: 'the token file restored',
  },
  {
    id: 'journal-torn',
    fault: 'the journal torn (half written)',
    moment: '`--resume` reads it',
    trigger: { at: 'before' },
    args: ['--only', 'node-baseline', '--resume', '--json'],
    cause: 'STATE_FILE_CORRUPT',
    host: '-',
    budgetMs: 0,
    budget: 'none: read before any host is dialled',
    heal: 'the torn journal removed (`rm`, as the remedy says)',
  },
  {
    id: 'known-hosts-missing',
    fault: "a host's known_hosts entry missing",
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'HOST_KEY_UNKNOWN',
    host: S3,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'the entry restored',
  },
  {
    id: 'host-key-changed',
    fault: "a host's key changed (another key under its address)",
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'HOST_KEY_MISMATCH',
    host: S3,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'the entry restored',
  },
  {
    id: 'ssh-port-blocked',
    fault: 'port 22 blocked on a server (nftables, reject)',
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'SSH_UNREACHABLE',
    host: S2,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'port unblocked',
  },
  {
    id: 'operator-partition',
    fault: "a server's cable pulled (operator and peers lose it)",
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: ['--only', 'k3s-join', '--json'],
    cause: 'SSH_UNREACHABLE',
    host: S3,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'cable plugged back',
  },
  {
    id: 'agent-stopped',
    fault: 'the agent host powered off',
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: ['--only', 'agents', '--json'],
    cause: 'SSH_UNREACHABLE',
    host: AGENT,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'host started, its node Ready again',
  },
  {
    id: 'sudo-revoked',
    fault: "ops's passwordless sudo revoked",
    moment: "the run takes the host locks, its sudo check (a --check: the connection's sudo check)",
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'SUDO_NEEDS_PASSWORD',
    host: S2,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS,
    budget: 'connectBudgetMs + LOCK_ACQUIRE_BUDGET_MS',
    heal: 'the sudoers entry restored',
  },
  {
    id: 'ssh-key-revoked',
    fault: "the operator's key removed from ops's authorized_keys",
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'SSH_AUTH_FAILED',
    host: S2,
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'authorized_keys restored',
  },
  {
    id: 'identity-torn',
    fault: "the operator's identity file torn (half a key)",
    moment: 'the run connects',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'SSH_IDENTITY_UNUSABLE',
    host: '-',
    budgetMs: CONNECT,
    budget: 'connectBudgetMs',
    heal: 'the key restored',
  },
  {
    id: 'sudo-revoked-mid-run',
    fault: "ops's passwordless sudo revoked after the run took its locks and changed a host",
    moment: "rolling-servers' preflight: its probes asked again through sudo after node-baseline's change (the run's first probes went beside the locks)",
    trigger: { at: 'phase-start', phase: 'rolling-servers' },
    args: ['--until', 'rolling-servers', '--json'],
    cause: 'SUDO_NEEDS_PASSWORD',
    host: S2,
    budgetMs: PROBE_BUDGET_MS,
    budget: 'PROBE_BUDGET_MS',
    heal: 'the sudoers entry restored (the run released its lock without sudo)',
  },
  {
    id: 'lock-held',
    fault: 'another live run holds the host locks',
    moment: 'the second run takes the locks (the first is in verify)',
    trigger: { at: 'before' },
    args: BASELINE,
    cause: 'LOCK_HELD',
    host: 'k3s-lab-1',
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS,
    budget: 'connectBudgetMs + LOCK_ACQUIRE_BUDGET_MS',
    heal: 'the first run ends',
  },
  {
    id: 'disk-full',
    fault: 'the disk under /var/lib/rancher full',
    moment: "node-baseline's probes",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'DISK_LOW',
    host: S3,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + PROBE_BUDGET_MS,
    budget: 'connect + sudo + lock + PROBE_BUDGET_MS',
    heal: 'the disk freed',
  },
  {
    id: 'clock-skew',
    fault: "a server's clock 10 min ahead",
    moment: "node-baseline's probes",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'CLOCK_SKEW',
    host: S2,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + PROBE_BUDGET_MS,
    budget: 'connect + sudo + lock + PROBE_BUDGET_MS',
    heal: 'clock skew 0',
  },
  {
    id: 'nic-renamed',
    fault: 'the NIC controlPlane.interface names renamed (eth0 → ens5)',
    moment: "node-baseline's probes",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'NIC_NOT_FOUND',
    host: S3,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + PROBE_BUDGET_MS,
    budget: 'connect + sudo + lock + PROBE_BUDGET_MS',
    heal: 'renamed back to eth0',
  },
  {
    id: 'tool-removed',
    fault: 'a program the engine runs removed from a server (`ss`, of iproute2)',
    moment: "node-baseline's probes",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'TOOL_MISSING',
    host: S3,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + PROBE_BUDGET_MS,
    budget: 'connect + sudo + lock + PROBE_BUDGET_MS',
    heal: 'the program put back',
  },
  {
    id: 'ssh-dropped-mid-batch',
    fault:
      "the SSH connection to a server dropped while node-baseline's probe batch runs on it (its sshd session killed from inside the batch, as an sshd restart does)",
    moment: "node-baseline's probe batch, at its port probe",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'SSH_UNREACHABLE',
    host: S3,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + lostConnectionBudgetMs(),
    budget: 'connect + sudo + lock + lostConnectionBudgetMs',
    heal: "the probe's program put back; the stopped run released its lock there over a fresh connection, so the rerun is not refused",
  },
  {
    id: 'default-route-lost',
    fault: "a server's default route deleted",
    moment: "node-baseline's probes",
    trigger: { at: 'run-start' },
    args: BASELINE,
    cause: 'NO_DEFAULT_ROUTE',
    host: S3,
    budgetMs: CONNECT + LOCK_ACQUIRE_BUDGET_MS + PROBE_BUDGET_MS,
    budget: 'connect + sudo + lock + PROBE_BUDGET_MS',
    heal: 'the route put back',
  },
  {
    id: 'k3s-stopped',
    fault: 'k3s stopped on a server',
    moment: "verify's first looks (they go out as the run starts, with its probes)",
    trigger: VERIFY_LOOKS,
    args: VERIFY,
    cause: 'API_UNREACHABLE_VIA',
    host: S3,
    budgetMs: apiReady.budgetMs,
    budget: 'apiReady.budgetMs',
    budgetFromGate: apiReady.id,
    heal: 'k3s started, the server Ready again',
  },
  {
    id: 'apiserver-port-blocked',
    fault: 'port 6443 blocked on a server',
    moment: "verify's first looks (they go out as the run starts, with its probes)",
    trigger: VERIFY_LOOKS,
    args: VERIFY,
    cause: 'API_UNREACHABLE_VIA',
    host: S3,
    budgetMs: apiReady.budgetMs,
    budget: 'apiReady.budgetMs',
    budgetFromGate: apiReady.id,
    heal: 'port unblocked',
  },
  {
    id: 'coredns-down',
    fault: 'CoreDNS scaled to 0',
    moment: "verify's first looks (they go out as the run starts, with its probes)",
    trigger: VERIFY_LOOKS,
    args: VERIFY,
    cause: 'COREDNS_NOT_READY',
    host: 'k3s-lab-1',
    budgetMs: corednsReady.budgetMs,
    budget: 'corednsReady.budgetMs',
    budgetFromGate: corednsReady.id,
    heal: 'CoreDNS scaled back to 1, Ready',
  },
  {
    id: 'restore-server-lost',
    fault: 'a server loses power in the middle of a restore (its cable first, so nothing on the wire says so, as in a power cut)',
    moment: "`--restore`: k3s-join starts to rejoin it, after the founder's cluster-reset and the first server's rejoin",
    trigger: { at: 'step-start', phase: 'k3s-join', step: 'restore-wipe', host: S3 },
    args: ['--restore', '<backup>', '--json'],
    // The runbook's restore command (the drill runs its `sh lab restore` block as the rerun).
    rerunArgs: ['--restore', '<backup>'],
    cause: 'SSH_UNREACHABLE',
    host: S3,
    budgetMs: lostConnectionBudgetMs(),
    budget: 'lostConnectionBudgetMs (its SSH keepalives unanswered)',
    heal: 'cable back, host started; the same `--restore <backup>` finishes the restore without restoring the founder or wiping k3s-lab-2 again: every object back by content, 3 voters, the agent',
    file: 'test/lab/dr-restore.test.ts',
  },
  {
    id: 'upgrade-drain-blocked',
    fault: "a PodDisruptionBudget that allows no eviction (minAvailable equal to its Deployment's 2 replicas)",
    moment: "a rolling upgrade (v1.33.5+k3s1 → v1.33.7+k3s3): the first server is back on the new release, the next one's drain is to come",
    trigger: { at: 'gate-start', gate: backAfterRestart.id },
    args: ['--until', 'cilium', '--json'],
    rerunArgs: ['--until', 'cilium', '--json', '--resume'],
    cause: 'DRAIN_BLOCKED',
    // The server after the first: which one depends on who holds the VIP (it goes last).
    host: '-',
    budgetMs: backAfterRestart.budgetMs + QUORUM_CHECK_BUDGET_MS + DRAIN_ROW_SECONDS * 1000,
    budget: `backAfterRestart.budgetMs + QUORUM_CHECK_BUDGET_MS + k3s.drainSeconds (${DRAIN_ROW_SECONDS} s in the row's inventory, 180 s by default) (the first server back, the next one checked, its drain refused until its budget ends)`,
    heal: 'the budget relaxed to minAvailable 1; `--resume` goes on from the blocked server (the node was uncordoned, its k3s untouched)',
    file: 'test/lab/rolling-upgrade.test.ts',
  },
  {
    id: 'upgrade-etcd-member-killed',
    fault: "a server's k3s and its etcd member killed (SIGKILL, held down) after the upgrade's preflight: 2 of 3 members left",
    moment: "a rolling upgrade (v1.33.7+k3s3 → v1.34.1+k3s1): the first server's turn begins",
    trigger: { at: 'step-start', phase: 'rolling-servers', step: 'rolling' },
    args: ['--until', 'cilium', '--json'],
    cause: 'QUORUM_AT_RISK',
    host: S3,
    budgetMs: QUORUM_CHECK_BUDGET_MS,
    budget: 'QUORUM_CHECK_BUDGET_MS (the read-only check before the first backup, drain or restart: nothing changed)',
    heal: "k3s started again on k3s-lab-3; the rerun upgrades every host, watched from the operator's side",
    file: 'test/lab/rolling-upgrade.test.ts',
  },
  {
    id: 'join-peers-cut',
    fault: 'a joining server cut off from the other servers and the VIP (nftables drops both ways; the operator still reaches it over SSH)',
    moment: 'k3s-join starts k3s on a server that never joined',
    trigger: S3_STARTS_K3S,
    args: JOIN,
    cause: 'JOIN_FOUNDER_UNREACHABLE',
    host: S3,
    budgetMs: joinerIsVoter.budgetMs,
    budget: 'joinerIsVoter.budgetMs',
    heal: 'the cut mended (k3s, restarted by systemd, joins by itself)',
  },
  {
    id: 'join-etcd-member-killed',
    fault: "a voter's etcd member killed (SIGKILL, its k3s held down): 1 of the 2 voters left, quorum lost",
    moment: 'k3s-join starts k3s on a server that never joined',
    trigger: S3_STARTS_K3S,
    args: JOIN,
    cause: 'ETCD_QUORUM_LOST',
    host: S2,
    budgetMs: joinerIsVoter.budgetMs,
    budget: 'joinerIsVoter.budgetMs',
    heal: "k3s started again on the killed member's server (quorum back; the waiting joiner joins by itself)",
  },
  {
    id: 'flux-controller-crashloop',
    fault:
      'source-controller exiting at every start: its Deployment given a feature gate it does not support (`--feature-gates=CancelHealthCheckOnNewRevision=true`, a kustomize- and helm-controller gate); its Recreate strategy replaced the only pod',
    moment: 'before a run of the flux phase alone, whose wait for Flux Ready is the first to read the controllers: the new pod in CrashLoopBackOff',
    // Before the run: a run frozen at an event of its own (a step's or the gate's start) was frozen too late when
    // the gate's first reads had gone out already (everything Ready, no crash loop yet): the test sees the event
    // on the run's stdout and stops it a few milliseconds later, while a converged flux phase takes fewer to reach
    // its gate. The steps before the gate read the controllers' Deployments by their applied hash only, which the
    // fault does not change: the gate's first look is where the fault is met, as at the step's start.
    trigger: { at: 'before' },
    args: ['--only', 'flux', '--json'],
    cause: 'FLUX_CONTROLLER_CRASHLOOP',
    host: 'k3s-lab-1',
    budgetMs: FLUX_POLL_MAX_MS,
    budget: "FLUX_POLL_MAX_MS: named at the wait's first look, before any reconcile request",
    heal: 'the flag removed again: a new pod Running, the Deployment Available',
    file: 'test/lab/flux.test.ts',
  },
  {
    id: 'rollout-vip-blocked',
    fault: "the agent's way to the VIP's 6443 blocked (a firewall between that node and the VIP; its kubelet keeps the servers' own addresses)",
    moment: "a Cilium rollout: changed HelmRelease values roll the DaemonSet, the agent's new pod dials the VIP",
    // Before the HelmChart is written: the fault is in place before any pod of the new template exists.
    trigger: { at: 'step-start', phase: 'cilium', step: 'helmchart' },
    args: ['--only', 'cilium', '--json'],
    cause: 'CILIUM_API_UNREACHABLE',
    host: AGENT,
    budgetMs: ciliumRolledOut.budgetMs,
    budget: 'ciliumRolledOut.budgetMs (the config init container gives up after its minute of tries)',
    budgetFromGate: ciliumRolledOut.id,
    heal: 'the rule removed; the rerun waits for the kubelet to start the config container again',
  },
  {
    id: 'vip-blocked-from-server',
    fault: "a server's way to the VIP's 6443 blocked (a firewall on k3s-lab-2's way out; the VIP held and answering elsewhere)",
    moment: "kube-vip's VIP gate",
    trigger: { at: 'phase-start', phase: 'kube-vip' },
    args: ['--only', 'kube-vip', '--json'],
    cause: 'VIP_NOT_ANSWERING',
    host: S2,
    budgetMs: vipAnswers.budgetMs,
    budget: "vipAnswers.budgetMs (a known failure in kube-vip's log would end it early; none here)",
    budgetFromGate: vipAnswers.id,
    heal: 'the rule removed',
  },
  {
    id: 'agent-reinstalled',
    fault: 'the agent host reinstalled (fresh disk: a new /etc/rancher/node/password) while its Node and node-password Secret remain',
    moment: 'agents: the reinstalled agent registers',
    trigger: { at: 'before' },
    args: ['--until', 'agents', '--json'],
    cause: 'NODE_PASSWORD_REJECTED',
    host: AGENT,
    budgetMs: agentRegistered.budgetMs,
    budget: "agentRegistered.budgetMs (named at the agent's first refusal)",
    budgetFromGate: agentRegistered.id,
    heal: 'the old Node deleted (`k3s kubectl delete node`, which deletes its node-password Secret), as the remedy says',
  },
  {
    id: 'cilium-agent-hung',
    fault: "the Cilium agent on a server hung (its container's processes frozen, SIGSTOP): its status API does not answer",
    moment: "verify's first looks (they go out as the run starts, with its probes)",
    trigger: VERIFY_LOOKS,
    args: VERIFY,
    cause: 'CILIUM_AGENTS_NOT_READY',
    host: S3,
    budgetMs: ciliumAgentsLive.budgetMs,
    budget: 'ciliumAgentsLive.budgetMs',
    budgetFromGate: ciliumAgentsLive.id,
    heal: "the agent's processes continued (SIGCONT)",
  },
  {
    id: 'join-stalled',
    fault:
      "a joining server's k3s never runs: its start hangs before k3s starts (an ExecStartPre that never returns, as a modprobe stuck in a broken module does) and nothing is logged",
    moment: 'k3s-join starts k3s on a server that never joined',
    trigger: S3_STARTS_K3S,
    args: JOIN,
    cause: 'JOIN_STALLED',
    host: S3,
    budgetMs: START_PRE_LIMIT_MS + 5_000,
    budget: "START_PRE_LIMIT_MS and a poll (k3s's unit still in systemd's start-pre; nothing in its journal)",
    budgetFromGate: joinerIsVoter.id,
    seen: /^activating start-pre; still running: \/bin\/sleep infinity$/,
    heal: 'the hanging ExecStartPre removed and the start job cancelled (the rerun starts k3s)',
  },
];

const cell = (s: string) => s.replaceAll('|', '\\|');
const seconds = (ms: number) => (ms === 0 ? '0 s' : `${ms / 1000} s`);

/** README.md's table (the lines between its markers). */
export function readmeTable(rows: FaultRow[] = FAULT_ROWS): string {
  const head = ['| fault | moment | cause (host) | budget (+ 2 s) | heal, then a rerun passes |', '| --- | --- | --- | --- | --- |'];
  const moment = (r: FaultRow) => (r.file ? `${r.moment} (run by \`${r.file}\`)` : r.moment);
  const body = rows.map(
    (r) =>
      `| ${cell(r.fault)} | ${cell(moment(r))} | \`${r.cause}\` (${r.host === '-' ? 'the file' : r.host}) | ${seconds(r.budgetMs)}: ${cell(r.budget)} | ${cell(r.heal)} |`,
  );
  return [...head, ...body].join('\n');
}

export const README_BEGIN = '<!-- fault-matrix:begin (generated from test/support/fault-matrix.ts) -->';
export const README_END = '<!-- fault-matrix:end -->';
