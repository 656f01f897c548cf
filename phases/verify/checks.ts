// The read-only checks of verify, one gate each; every gate prints one row per host and stops with a
// named cause. They read the cluster live, over SSH, from the servers (the vantage the operator's old
// checks lacked: a server sees what the cluster sees, the operator's laptop does not).
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeResult } from '../../src/engine/phase.ts';
import { parallelismOf } from '../../src/inventory/parallelism.ts';
import type { Remote } from '../../src/transport/types.ts';
import { eachLimited, Semaphore } from '../../src/util/limit.ts';
import { agentRefs, allHostRefs, serverRefs } from '../../src/inventory/hosts.ts';
import { checkAgentServiceHost } from '../../src/addons/cilium-agent-env.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE } from '../../src/addons/kube-vip.ts';
import { apiVerdict, operatorVerdict, type Target } from './api-verdict.ts';
import { rawGetProbe, readyzVia } from '../../src/k3s/remote.ts';
import { handshakeVia } from '../../src/kube/handshake.ts';
import { apiCredentialsOf } from '../../src/kube/reads-through.ts';
import { readyzThrough, type ApiCredentials, type Readyz } from '../../src/kube/get-through.ts';
import { SERVER_CA } from '../../src/k3s/paths.ts';
import { kprMode, kprOn } from './cilium-health.ts';
import { failureConfirmed, nodeHealth, type Unreachable } from './node-health.ts';
import { compareMembers, describeMember, memberOfNode, mismatchLine, readMembers, type Member } from '../../src/k3s/etcd-members.ts';
import { describeStranger, notInInventory, nodesSeen, readiness, type NodeSeen } from '../../src/k3s/nodes.ts';
import { batch, checkGate, lastLine, readCluster, type Row, type Verdict } from './read.ts';

const unreadable = (seen: string, host?: string): Verdict => ({
  rows: [{ host: host ?? '-', ok: false, detail: 'no server answered kubectl' }],
  stops: [
    new CauseError('API_UNREACHABLE_VIA', {
      host,
      message: 'The API is not ready through https://127.0.0.1:6443 on any server',
      evidence: { command: 'k3s kubectl get nodes (on each server)', seen },
    }),
  ],
});

/** What a look says when crictl lists no running agent container (instead of crictl's help text). */
const NO_AGENT_CONTAINER = 'no running cilium-agent container on this node (k3s crictl exec --name cilium-agent --state running)';

const founderName = (hosts: HostRef[]) => hosts.find((h) => h.founder)?.name;

export const nodesReady = checkGate({
  id: 'nodes-ready',
  title: 'node Ready',
  budgetMs: 60_000,
  look: async (_host, ctx) => {
    const hosts = allHostRefs(ctx.inventory);
    const read = await readCluster(ctx, (api) => api.nodes());
    if (!read.ok) return unreadable(read.seen, founderName(hosts));
    const nodes = nodesSeen(read.value);
    const names = hosts.map((h) => h.name);
    const rows = readiness(nodes, names);
    const stops = rows
      .filter((r) => !r.ok)
      .map(
        (r) =>
          new CauseError('NODE_NOT_READY', {
            host: r.host,
            message: `Node ${r.host} is not Ready`,
            evidence: { command: 'kubectl get nodes', seen: `${r.host}: ${r.detail}` },
          }),
      );
    for (const n of notInInventory(nodes, names)) {
      rows.push({ host: n.name, ok: false, detail: describeStranger(n) });
      stops.push(strangerError(n, 'kubectl get nodes'));
    }
    return { rows, stops };
  },
});

/** A Node the inventory does not list, its etcd member named when it has one. */
function strangerError(n: NodeSeen, command: string, member?: string): CauseError {
  return new CauseError('NODE_NOT_IN_INVENTORY', {
    host: n.name,
    message: `Node ${n.name} is in the cluster but not in the inventory${member ? `, and its etcd member ${member} counts toward quorum` : ''}`,
    evidence: { command, seen: `${n.name}: ${describeStranger(n)}${member ? `; etcd member ${member}` : ''}` },
  });
}

const MEMBER_LIST_SHOWN = 'k3s kubectl get --raw /db/info';

/** etcd's member list (src/k3s/etcd-members.ts MEMBER_LIST_COMMAND) as a probe: the same GET, through the run's connection when it can. */
const MEMBER_LIST = rawGetProbe('/db/info');

export const etcdVoters = checkGate({
  id: 'etcd-voters',
  title: 'etcd voter',
  budgetMs: 60_000,
  look: async (_host, ctx) => {
    const servers = serverRefs(ctx.inventory);
    // The Nodes (EtcdIsVoter) and etcd's member list at once. etcd's list is the same everywhere: the first
    // server's is the one judged, and only when it does not answer are the others asked (each its own etcd).
    const membersOn = async (s: HostRef) => ({ s, r: (await batch(ctx, s, { members: MEMBER_LIST })).members });
    const [read, lists] = await Promise.all([
      readCluster(ctx, (api) => api.nodes()),
      membersOn(servers[0]).then(async (first) => (readMembers(first.r) ? [first] : [first, ...(await Promise.all(servers.slice(1).map(membersOn)))])),
    ]);
    if (!read.ok) return unreadable(read.seen, founderName(servers));
    const nodes = nodesSeen(read.value);
    const answered = lists.map((l) => ({ ...l, members: readMembers(l.r) })).find((l) => l.members);
    if (!answered) {
      const seen = lists.map((l) => `${l.s.name}: ${lastLine(l.r)}`).join('; ');
      return {
        rows: lists.map((l) => ({ host: l.s.name, ok: false, detail: `member list: ${lastLine(l.r)}` })),
        stops: [
          new CauseError('ETCD_MEMBERS_MISMATCH', {
            host: servers[0].name,
            message: 'No server answered the etcd member list',
            evidence: { command: `${MEMBER_LIST_SHOWN} (on each server)`, seen },
          }),
        ],
      };
    }
    const members = answered.members!;
    const verdict = compareMembers(members, servers, nodes);
    const rows: Row[] = servers.map((s) => {
      const m = verdict.voters[s.name];
      const miss = verdict.missing.find((x) => x.server === s.name);
      return m ? { host: s.name, ok: true, detail: `voter ${m.name}` } : { host: s.name, ok: false, detail: miss?.why ?? 'not a voter' };
    });
    // An extra member of a Node the inventory does not list is that Node's story (NODE_NOT_IN_INVENTORY);
    // one of no Node at all is etcd's own mismatch.
    const strangers = notInInventory(
      nodes,
      [...servers, ...agentRefs(ctx.inventory)].map((h) => h.name),
    );
    const ofStranger = (m: Member) => strangers.find((n) => memberOfNode(m, n.name));
    for (const m of verdict.extra) {
      const n = ofStranger(m);
      rows.push({
        host: n?.name ?? answered.s.name,
        ok: false,
        detail: `${n ? 'member of a Node not in the inventory' : 'extra member'} ${describeMember(m)}`,
      });
    }
    const strangerStops = verdict.extra.flatMap((m) => {
      const n = ofStranger(m);
      return n ? [strangerError(n, `${MEMBER_LIST_SHOWN} (on ${answered.s.name}); kubectl get nodes`, describeMember(m))] : [];
    });
    const line = mismatchLine({ ...verdict, extra: verdict.extra.filter((m) => !ofStranger(m)) });
    const stops = strangerStops.concat(
      line
        ? [
            new CauseError('ETCD_MEMBERS_MISMATCH', {
              host: verdict.missing[0]?.server ?? answered.s.name,
              message: `etcd's voters are not the servers: ${line}`,
              evidence: { command: `${MEMBER_LIST_SHOWN} (on ${answered.s.name}); kubectl get nodes (EtcdIsVoter)`, seen: line },
            }),
          ]
        : [],
    );
    return { rows, stops };
  },
});

export const apiReady = checkGate({
  id: 'api-ready',
  title: "API /readyz via the VIP and every server, from every server; TLS from the operator's side",
  budgetMs: 40_000,
  look: async (host, ctx) => {
    const servers = serverRefs(ctx.inventory);
    const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
    const targets: Target[] = [
      { key: 'vip', label: `VIP ${vip}`, address: vip },
      ...servers.map((s, i) => ({ key: `s${i}`, label: `${s.name} ${s.address}`, address: s.address, owner: s.name })),
    ];
    const creds = await apiCredentialsOf(ctx);
    if (creds) return throughServers(ctx, host, servers, targets, port, creds);
    // No kubeconfig in the state folder (a state folder of another machine): each server asks with its own
    // admin kubeconfig, `k3s kubectl` there.
    const commands = Object.fromEntries(targets.map((t) => [t.key, readyzVia(t.address, port)]));
    // Each address's /readyz at once on each server: they wait on different API servers, not on each other.
    const [seen, operator] = await Promise.all([
      Promise.all(servers.map(async (vantage) => ({ vantage: vantage.name, results: await batch(ctx, vantage, commands, { concurrent: true }) }))),
      fromOperator(ctx, host, targets, port),
    ]);
    const fromServers = apiVerdict(targets, port, seen);
    return { rows: [...fromServers.rows, ...operator.rows], stops: [...fromServers.stops, ...operator.stops] };
  },
});

/**
 * Every address's /readyz from every server, all at once and without a process on any host: each server's
 * sshd opens the connection (src/kube/get-through.ts), the engine speaks TLS with the admin kubeconfig.
 * The operator's vantage is the TLS of these requests through `via`'s connection.
 */
async function throughServers(ctx: RunContext, via: HostRef, servers: HostRef[], targets: Target[], port: number, creds: ApiCredentials): Promise<Verdict> {
  const seen = await Promise.all(
    servers.map(async (vantage) => ({
      vantage: vantage.name,
      answers: Object.fromEntries(
        await Promise.all(targets.map(async (t) => [t.key, await readyzThrough(ctx.remote(vantage), t.address, port, creds)] as const)),
      ),
    })),
  );
  const asResult = (r: Readyz) => (r.ok ? { code: 0, stdout: 'ok', stderr: '' } : { code: 1, stdout: '', stderr: r.seen });
  const fromServers = apiVerdict(
    targets,
    port,
    seen.map(({ vantage, answers }) => ({ vantage, results: Object.fromEntries(Object.entries(answers).map(([k, r]) => [k, asResult(r)])) })),
    (t) => `GET https://${t.address}:${port}/readyz from each server (the engine, through its SSH connection to the server, with the admin kubeconfig)`,
  );
  const mine = seen.find((s) => s.vantage === via.name)?.answers ?? {};
  const operator = operatorVerdict(
    targets,
    port,
    via.name,
    Object.fromEntries(
      targets.map((t) => {
        const r = mine[t.key];
        return [t.key, r?.tls ? { ok: true } : { ok: false, seen: `${t.address}:${port} through ${via.name}: ${r?.seen ?? `${via.name} is no server`}` }];
      }),
    ),
  );
  return { rows: [...fromServers.rows, ...operator.rows], stops: [...fromServers.stops, ...operator.stops] };
}

/** The engine's own vantage, through the SSH connection it holds to `via` (works behind a bastion or NAT). */
async function fromOperator(ctx: RunContext, via: HostRef, targets: Target[], port: number) {
  const ca = await ctx
    .remote(via)
    .exec(`cat ${SERVER_CA}`, { readOnly: true, sudo: true, timeoutMs: 15_000, signal: ctx.signal })
    .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  if (ca.code !== 0 || !ca.stdout.includes('BEGIN CERTIFICATE')) {
    const why = `the cluster CA could not be read on ${via.name}: ${lastLine(ca)}`;
    return operatorVerdict(targets, port, via.name, Object.fromEntries(targets.map((t) => [t.key, { ok: false, seen: why }])));
  }
  const seen = await Promise.all(targets.map(async (t) => [t.key, await handshakeVia(ctx.remote(via), t.address, port, ca.stdout)] as const));
  return operatorVerdict(targets, port, via.name, Object.fromEntries(seen.map(([k, h]) => [k, h.ok ? { ok: true } : { ok: false, seen: h.seen }])));
}

export const vipLeaseHeld = checkGate({
  id: 'vip-lease',
  title: 'kube-vip lease held by a server',
  budgetMs: 40_000,
  look: async (host, ctx) => {
    const servers = serverRefs(ctx.inventory);
    const command = `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o json`;
    const read = await readCluster(ctx, (api) => api.lease(KUBE_VIP_NAMESPACE, KUBE_VIP_LEASE));
    const holder = read.ok ? (read.value.spec?.holderIdentity ?? '') : '';
    if (holder && servers.some((s) => s.name === holder)) return { rows: [{ host: holder, ok: true, detail: `holds ${KUBE_VIP_LEASE}` }], stops: [] };
    const seen = !read.ok
      ? `the lease cannot be read: ${read.seen}`
      : holder
        ? `held by ${holder}, which is no server of the inventory`
        : 'the lease has no holder';
    return {
      rows: [{ host: host.name, ok: false, detail: seen }],
      stops: [new CauseError('VIP_LEASE_NOT_HELD', { host: host.name, evidence: { command: `kubectl ${command}`, seen } })],
    };
  },
});

/**
 * k3s's embedded crictl runs a command in the node's running cilium-agent container, found by its filter flags
 * in the same call (kubernetes-sigs/cri-tools v1.33.0 `cmd/crictl/exec.go`: with --name/--state no container
 * ID is taken and every argument is the command; `-q` leaves out the "<id>:" line before each container's
 * output). One crictl start instead of `crictl ps` and then `crictl exec <id>`. When none is listed crictl
 * logs NO_CONTAINERS, prints exec's help on stdout and exits 0 (`cli.ShowSubcommandHelp` returns nil): the
 * looks tell that apart by the missing frames and these words.
 */
const IN_AGENT = 'k3s crictl exec --name cilium-agent --state running -q';

/** crictl's error when its filter flags list no container (cri-tools v1.33.0 cmd/crictl/exec.go, logrus.Error). */
const NO_CONTAINERS = 'No containers found per filter flags';

/**
 * The agent's own status, as on a real node: `cilium-dbg status -o json` inside the cilium-agent container
 * prints the agent's StatusResponse (cilium/cilium cilium-dbg/cmd/status.go; api/v1/models
 * status_response.go). Nothing beyond k3s is needed on the host.
 */
const STATUS_IN_AGENT = 'cilium-dbg status -o json';

/** The status alone, as an operator runs it on the node: what a failed status names as its command. */
export const CILIUM_STATUS_COMMAND = `${IN_AGENT} ${STATUS_IN_AGENT}`;

/**
 * Node-to-node health as Cilium itself measures it: in each node's agent container, `cilium-health status -o
 * json` prints the agent's last published report of its probes of every node (cilium/cilium @f12299b2
 * cilium-health/cmd/status.go, GET /v1beta/status; api/v1/health/openapi.yaml HealthStatusResponse). Not
 * `--probe`: since Cilium 1.17 it is hidden and answers the same cached report (pkg/health/server/server.go
 * FetchStatusResponse; Documentation/operations/upgrade.rst), so it would promise a fresh probe it does not make.
 */
const HEALTH_IN_AGENT = 'cilium-health status -o json';

/** The health report alone (ciliumNodeHealth's later looks ask it so): what a failed read names as its command. */
export const CILIUM_HEALTH_COMMAND = `${IN_AGENT} ${HEALTH_IN_AGENT}`;

/** Frames each look's output inside the agent's container (a JSON line never starts with it). */
const AGENT_FRAME = '::bootstrap-cilium-agent::';

/**
 * The status and the health probe in ONE exec into the agent's container, found by the same call: each k3s
 * start (crictl) costs the host a tenth of a second or more, each exec a process in the container. sh in the container runs
 * both, one after the other, each one's stdout framed on stdout (`<frame> B <key>` … `<frame> E <key> <status>`)
 * and its stderr on stderr (`<frame> B <key>` … `<frame> E <key>`): crictl exec without a terminal passes the
 * two streams and the script's status apart (kubernetes-sigs/cri-tools @88f266c `cmd/crictl/exec.go`). As in
 * src/engine/probe-batch.ts the newline before a closing frame is the frame's own.
 * The agent image has a shell: cilium/cilium's images/cilium/Dockerfile builds the release image FROM its
 * runtime image, whose images/runtime/Dockerfile copies a whole Ubuntu 24.04 root filesystem (read at
 * cilium/cilium commits 00014a99 and 001bb354; the v1.19 branch and tags could not be read here), and the chart of this
 * release runs `bash -ec` and `/bin/bash -c` in that very image (cilium/cilium v1.19.5
 * install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml: the mount-cgroup and
 * apply-sysctl-overwrites init containers, `image: {{ include "cilium.image" .Values.image }}`).
 */
export const CILIUM_AGENT_COMMAND = (() => {
  const look = [
    'f() { k=$1; shift;',
    `echo "${AGENT_FRAME} B $k"; echo "${AGENT_FRAME} B $k" >&2;`,
    '"$@"; r=$?;',
    `echo; echo "${AGENT_FRAME} E $k $r"; echo >&2; echo "${AGENT_FRAME} E $k" >&2; };`,
  ].join(' ');
  return `${IN_AGENT} sh -c '${look} f status ${STATUS_IN_AGENT}; f health ${HEALTH_IN_AGENT}'`;
})();

/** A stream of CILIUM_AGENT_COMMAND split by its frames: each look's part (closed, or cut short) and the rest. */
function frames(text: string) {
  const closed = new Map<string, { body: string; tail?: string }>();
  const open = new Map<string, string>();
  const outside: string[] = [];
  const lines = text.split('\n');
  let key: string | undefined;
  let body: string[] = [];
  lines.forEach((line, i) => {
    const m = line.startsWith(`${AGENT_FRAME} `) ? /^([BE]) (\S+)(?: (\d+))?$/.exec(line.slice(AGENT_FRAME.length + 1)) : null;
    if (m?.[1] === 'B') {
      key = m[2];
      body = [];
    } else if (m?.[1] === 'E' && m[2] === key) {
      // The body without the newline before the closing frame (the frame's own).
      closed.set(key, { body: body.join('\n'), tail: m[3] });
      key = undefined;
    } else if (!m && !(i === lines.length - 1 && line && AGENT_FRAME.startsWith(line.split(' ')[0]))) {
      // (A frame line cut short at the end of the stream is no output.)
      (key ? body : outside).push(line);
    }
  });
  if (key) open.set(key, body.join('\n'));
  return { closed, open, outside: outside.join('\n') };
}

/**
 * Each look's own result (stdout, stderr, status) out of CILIUM_AGENT_COMMAND's: as CILIUM_STATUS_COMMAND and
 * CILIUM_HEALTH_COMMAND would each have answered. A look without its closing frame (no agent container, the
 * exec refused, the batch cut short) gets what it printed so far or else what the command said outside the
 * frames, and the command's status, or none when the command ended well without it.
 */
export function agentLooks(answer: ProbeResult): { status: ProbeResult; health: ProbeResult } {
  const res = agentFound(answer);
  const out = frames(res.stdout);
  const err = frames(res.stderr);
  const one = (key: string): ProbeResult => {
    const done = out.closed.get(key);
    const stderr = err.closed.get(key)?.body ?? err.open.get(key);
    if (done?.tail !== undefined) return { stdout: done.body, stderr: stderr ?? '', code: Number(done.tail) };
    return { stdout: out.open.get(key) ?? out.outside, stderr: stderr ?? err.outside, code: res.code === 0 ? null : res.code };
  };
  return { status: one('status'), health: one('health') };
}

/**
 * A command run through IN_AGENT as it would have ended had crictl found no container to run it in and said
 * so as an error: status 1, NO_AGENT_CONTAINER and crictl's own log line, without exec's help text. Any other
 * answer as it came.
 */
export function agentFound(res: ProbeResult): ProbeResult {
  if (res.code !== 0 || !res.stderr.includes(NO_CONTAINERS) || res.stdout.includes(AGENT_FRAME)) return res;
  const said = res.stderr.split('\n').find((l) => l.includes(NO_CONTAINERS)) ?? NO_CONTAINERS;
  return { ...res, stdout: '', stderr: `${said}\n${NO_AGENT_CONTAINER}\n`, code: 1 };
}

export const ciliumAgentsLive = checkGate({
  id: 'cilium-agents',
  title: 'Cilium agent Ready, kube-proxy replacement on, dialling the VIP (live)',
  budgetMs: 60_000,
  look: async (_host, ctx) => {
    const hosts = allHostRefs(ctx.inventory);
    const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
    // Every agent's status and health probe (one exec into its container a host) asked before the pods are
    // read, so that both overlap; the health answer is the next check's first look. At most the inventory's
    // parallelism at once: each exec starts crictl and has the agent probe every node, and 30 hosts asked
    // together kept a 2-core lab busy past the look's budget (3 servers + 27 agents).
    const slots = new Semaphore(parallelismOf(ctx.inventory));
    const asked = new Map(
      hosts.map((h) => {
        const answer = slots.acquire().then(async (release) => {
          try {
            return agentLooks((await batch(ctx, h, { agent: CILIUM_AGENT_COMMAND })).agent);
          } finally {
            release();
          }
        });
        healthTaken.set(
          ctx.remote(h),
          answer.then((a) => a.health),
        );
        return [h.name, answer] as const;
      }),
    );
    const read = await readCluster(ctx, (api) => api.pods('kube-system', 'k8s-app=cilium'));
    if (!read.ok) return unreadable(read.seen, founderName(hosts));
    const pods = read.value.map((p) => {
      const c = (p.spec?.containers ?? []).find((x) => x.name === 'cilium-agent') ?? p.spec?.containers?.[0];
      return {
        name: p.metadata?.name ?? '',
        node: p.spec?.nodeName,
        env: Object.fromEntries((c?.env ?? []).flatMap((e) => (typeof e.value === 'string' ? [[e.name, e.value]] : []))) as Record<string, string>,
        ready: (p.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True'),
      };
    });
    const rows: Row[] = [];
    const stops: CauseError[] = [];
    await eachLimited(hosts, parallelismOf(ctx.inventory), async (h) => {
      const pod = pods.find((p) => p.node === h.name && p.ready) ?? pods.find((p) => p.node === h.name);
      if (!pod || !pod.ready) {
        const seen = pod ? `agent ${pod.name} on ${h.name} is not Ready` : `no Cilium agent pod on ${h.name}`;
        rows.push({ host: h.name, ok: false, detail: seen });
        stops.push(
          new CauseError('CILIUM_AGENTS_NOT_READY', {
            host: h.name,
            evidence: { command: 'kubectl get pods -n kube-system -l k8s-app=cilium -o wide', seen },
          }),
        );
        return;
      }
      const drift = checkAgentServiceHost([pod], vip, port, ctx.inventory.derived.serviceAddresses.kubernetes);
      if (drift.length) {
        rows.push({ host: h.name, ok: false, detail: drift[0].evidence.seen ?? 'service host drift' });
        stops.push(...drift);
        return;
      }
      const { status } = await asked.get(h.name)!;
      const mode = status.code === 0 ? kprMode(status.stdout) : undefined;
      if (!kprOn(mode)) {
        const seen = mode
          ? `agent ${pod.name} reports kube-proxy-replacement mode ${mode}`
          : `agent ${pod.name}'s status (cilium-dbg status) did not answer: ${lastLine(status)}`;
        rows.push({ host: h.name, ok: false, detail: seen });
        stops.push(
          mode
            ? new CauseError('KPR_MISMATCH', {
                host: h.name,
                message: `The running Cilium agent on ${h.name} does not replace kube-proxy`,
                evidence: { command: CILIUM_STATUS_COMMAND, seen },
              })
            : new CauseError('CILIUM_AGENTS_NOT_READY', { host: h.name, evidence: { command: CILIUM_STATUS_COMMAND, exitCode: status.code, seen } }),
        );
        return;
      }
      rows.push({ host: h.name, ok: true, detail: `${pod.name} Ready, kube-proxy replacement ${mode}, KUBERNETES_SERVICE_HOST=${vip}` });
    });
    const order = (r: Row) => hosts.findIndex((h) => h.name === r.host);
    rows.sort((a, b) => order(a) - order(b));
    return { rows, stops };
  },
});

/**
 * Per run and host (a run's connections are its own objects): the health probe ciliumAgentsLive asked beside
 * the agent's status, so that ciliumNodeHealth's first look costs no remote execution of its own.
 */
const healthTaken = new WeakMap<Remote, Promise<ProbeResult>>();

/**
 * How long the check waits for Cilium's health report to cover every node and to see a failure again in a later
 * probe: a report is published once a round or every 60 s, and a round at Cilium's default ratio lasts 60 s ×
 * ln(1 + the addresses probed) — about 4 min for 30 nodes — so a new node's first result, or a failure's next
 * probe, can take two rounds and a publication (phases/verify/node-health.ts).
 */
const NODE_HEALTH_BUDGET_MS = 600_000;
/**
 * A health API that does not answer is not waited for as long: the agents answered the check before, so what
 * is missing is cilium-health itself (health checking turned off in the values, or its server down).
 */
const NO_ANSWER_SETTLES_MS = 60_000;
/** A node whose report was not yet enough is read again at most this often: the report changes no faster. */
const HEALTH_REREAD_MS = 10_000;

/** A node's reading in this run: its verdict, and when it was read. */
interface HealthRead {
  atMs: number;
  row: Row;
  stop?: CauseError;
  /** The stop is a failure seen again in a probe made after the check first saw it (or one without a probe time): waiting will not clear it. */
  settled: boolean;
}

/**
 * Per run, from the check's turn on (its `begin`; a first look asked before it starts from nothing too): each
 * node's last reading (one that proved every path is kept and not read again) and, per pair that failed (per
 * node whose health API did not answer), when the check first saw it. Not the probe memo's mark: the check's own
 * waits move that.
 */
const healthReads = new WeakMap<RunContext, { reads: Map<string, HealthRead>; failedAt: Map<string, number> }>();

function healthMemo(ctx: RunContext) {
  let memo = healthReads.get(ctx);
  if (!memo) healthReads.set(ctx, (memo = { reads: new Map(), failedAt: new Map() }));
  return memo;
}

/** One node's health report judged: every other node reached, a failure (settled or not yet), or results missing. */
function judgeHealth(h: HostRef, res: ProbeResult, expected: string[], failedAt: Map<string, number>, nowMs: number): Omit<HealthRead, 'atMs'> {
  const health = res.code === 0 ? nodeHealth(res.stdout, { self: h.name, expected }) : undefined;
  if (!health) {
    const seen = `cilium-health status on ${h.name} did not answer: ${lastLine(res)}`;
    const since = failedAt.get(h.name) ?? nowMs;
    failedAt.set(h.name, since);
    return {
      row: { host: h.name, ok: false, detail: seen },
      stop: new CauseError('CILIUM_AGENTS_NOT_READY', { host: h.name, evidence: { command: CILIUM_HEALTH_COMMAND, exitCode: res.code, seen } }),
      settled: nowMs - since >= NO_ANSWER_SETTLES_MS,
    };
  }
  failedAt.delete(h.name);
  if (health.unreachable.length) {
    const pair = (u: Unreachable) => `${u.from}>${u.to}`;
    const settled = health.unreachable.every((u) => failureConfirmed(u, failedAt.get(pair(u))));
    for (const u of health.unreachable) if (!failedAt.has(pair(u))) failedAt.set(pair(u), nowMs);
    const lines = health.unreachable.map(
      (u) =>
        `${u.from} → ${u.to} (${u.ip}, ${u.path}): ${u.status}; open ${u.ports.join(' and ')} between them${u.lastProbed ? ` (probed ${u.lastProbed})` : ''}`,
    );
    const first = health.unreachable[0]!;
    return {
      row: {
        host: h.name,
        ok: false,
        detail: `cannot reach ${health.unreachable.map((u) => u.to).join(', ')}${settled ? '' : ' (waiting for the next probe)'}`,
      },
      stop: new CauseError('CILIUM_NODE_UNREACHABLE', {
        host: h.name,
        message: `Cilium on ${first.from} cannot reach ${first.to} (${first.ip}) on ${first.ports.join(' and ')}`,
        evidence: { command: CILIUM_HEALTH_COMMAND, seen: lines.join('\n') },
      }),
      settled,
    };
  }
  if (health.unprobed.length) {
    const round = `its report of ${health.timestamp ?? 'no time'}, a probe round every ${health.probeInterval ?? '(not said)'}`;
    const seen = `Cilium on ${h.name} has no result for ${health.unprobed.join(', ')} yet (${round})`;
    return {
      row: { host: h.name, ok: false, detail: `no result yet for ${health.unprobed.join(', ')}` },
      stop: new CauseError('CILIUM_HEALTH_NOT_REPORTED', { host: h.name, evidence: { command: CILIUM_HEALTH_COMMAND, seen } }),
      settled: false,
    };
  }
  return { row: { host: h.name, ok: true, detail: `reaches ${health.reached.join(', ') || 'no other node'}` }, settled: true };
}

export const ciliumNodeHealth = checkGate({
  id: 'cilium-node-health',
  title: "nodes reach each other (Cilium's health probes)",
  budgetMs: NODE_HEALTH_BUDGET_MS,
  begin: (ctx) => void healthReads.delete(ctx),
  look: async (_host, ctx) => {
    const hosts = allHostRefs(ctx.inventory);
    const memo = healthMemo(ctx);
    await eachLimited(hosts, parallelismOf(ctx.inventory), async (h) => {
      const before = memo.reads.get(h.name);
      // Proven in this run, or read too recently for its report to have changed.
      if (before && (before.row.ok || before.settled || ctx.clock.now() - before.atMs < HEALTH_REREAD_MS)) return;
      // Taken with the agent's status by the check before (once: a later look reads again).
      const taken = healthTaken.get(ctx.remote(h));
      healthTaken.delete(ctx.remote(h));
      const res = (await taken) ?? agentFound((await batch(ctx, h, { health: CILIUM_HEALTH_COMMAND })).health);
      const expected = hosts.map((x) => x.name).filter((n) => n !== h.name);
      const now = ctx.clock.now();
      memo.reads.set(h.name, { atMs: now, ...judgeHealth(h, res, expected, memo.failedAt, now) });
    });
    const reads = hosts.map((h) => memo.reads.get(h.name)!);
    const stops = reads.flatMap((r) => (r.stop ? [r.stop] : []));
    // Only settled failures left: nothing to wait for. A node without results, or a failure not yet seen again
    // in a probe made after the check first saw it, is looked at again until the budget.
    return { rows: reads.map((r) => r.row), stops, final: stops.length > 0 && reads.every((r) => !r.stop || r.settled) };
  },
});

export const corednsReady = checkGate({
  id: 'coredns',
  title: 'CoreDNS ready',
  budgetMs: 60_000,
  look: async (host, ctx) => {
    const command = 'get deployment -n kube-system coredns -o json';
    const read = await readCluster(ctx, (api) => api.deployment('kube-system', 'coredns'));
    let seen: string;
    let scaledToZero = false;
    if (read.ok && read.value) {
      const d = read.value;
      const want = Number(d.spec?.replicas ?? 1);
      const ready = Number(d.status?.readyReplicas ?? 0);
      if (want > 0 && ready >= want) return { rows: [{ host: read.vantage.name, ok: true, detail: `deployment coredns ${ready}/${want} ready` }], stops: [] };
      scaledToZero = want === 0;
      seen = want === 0 ? 'deployment kube-system/coredns is scaled to 0 replicas' : `deployment kube-system/coredns has ${ready}/${want} ready replicas`;
    } else {
      seen = read.ok ? 'deployment kube-system/coredns does not exist' : `deployment kube-system/coredns cannot be read: ${read.seen}`;
    }
    return {
      rows: [{ host: host.name, ok: false, detail: seen }],
      stops: [new CauseError('COREDNS_NOT_READY', { host: host.name, evidence: { command: `kubectl ${command}`, seen } })],
      // Zero replicas is a spec someone wrote: k3s re-applies its CoreDNS manifest only when it starts or the file
      // changes, so nothing scales it back while the run waits: named at once.
      final: scaledToZero,
    };
  },
});
