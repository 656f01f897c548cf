// The gates of k3s-founder and k3s-join: bounded waits that end ok or in a named cause, and that
// stop at once when k3s's journal already names the failure (no generic timeout to sit out).
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { parse } from 'yaml';
import { CauseError } from '../../src/errors.ts';
import type { LocalChange } from '../../src/engine/changes.ts';
import type { Gate, HostRef, Step } from '../../src/engine/phase.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { journalCursor } from './facts.ts';
import { joinTargetOf, joinViaHost } from './join-target.ts';
import { matchJoinFailure, type JournalMatch } from '../../src/k3s/journal-causes.ts';
import { MEMBER_PROBE, quorumLost, readServers, type QuorumLost } from './join-quorum.ts';
import { kubeconfigPath, operatorKubeconfig } from '../../src/k3s/kubeconfig-file.ts';
import { KUBECONFIG_FILE, SERVER_ROLE, TOKEN_FILE } from '../../src/k3s/paths.ts';
import { excerpt, journalSince, NOT_FOUND } from '../../src/k3s/remote.ts';
import { poll } from '../../src/engine/poll.ts';
import { apiRead } from '../../src/kube/api-read.ts';
import { nodesSeen } from '../../src/k3s/nodes.ts';
import { readToken, secretOf, tokenChange, type ClusterToken } from '../../src/k3s/token.ts';

const POLL_MS = 2_000;
const TRANSIENT_LIMIT_MS = 60_000;
/** How often, while etcd refuses a join for its health, the other servers are read for a lost quorum. */
const QUORUM_CHECK_MS = 6_000;
/**
 * How long k3s's unit may stay in systemd's `start-pre` state (its ExecStartPre lines: the install script's
 * `modprobe br_netfilter` and `modprobe overlay`, which take well under a second) before the join is named
 * stalled: k3s itself has not started, so its journal will never say why, and waiting the whole budget
 * cannot help.
 */
export const START_PRE_LIMIT_MS = 60_000;

export const founderApiReady: Gate = {
  id: 'founder-api-ready',
  title: "founder's API ready (/readyz)",
  budgetMs: 180_000,
  async run(host, ctx, signal) {
    let last = { code: null as number | null, out: '' };
    const ready = await poll(ctx, signal, {
      everyMs: POLL_MS,
      look: async () => {
        const res = await apiRead(ctx, host, { path: '/readyz', kubectl: "get --raw='/readyz'" }, 10_000);
        if (res.code === 0 && res.stdout.trim() === 'ok') return true;
        last = { code: res.code, out: res.stderr || res.stdout };
        return undefined;
      },
    });
    if (ready) return;
    const journal = await journalSince(ctx, host, ctx.facts.get(host.name, journalCursor), 40).catch(() => '');
    throw new CauseError('FOUNDER_API_NOT_READY', {
      host: host.name,
      evidence: { command: "k3s kubectl get --raw='/readyz'", exitCode: last.code, seen: last.out.trim().split('\n')[0], excerpt: excerpt(journal) },
    });
  },
};

interface StateFiles {
  token?: ClusterToken;
  kubeconfig: { content: string; mode: string } | null;
}

/**
 * Once the founder's API serves (after its gate): the full token (joiners pin the CA with it) and the admin
 * kubeconfig (dialling the VIP, 0600) kept in the state folder. Both are read by secret probes (never
 * logged) and written as local changes, only when the state folder's copy differs.
 */
export const clusterAccess: Step<StateFiles> = {
  id: 'cluster-access',
  title: 'full token and admin kubeconfig kept in the state folder',
  local: async (_host, ctx) => {
    const path = kubeconfigPath(ctx.stateDir);
    return {
      token: readToken(ctx.stateDir),
      kubeconfig: existsSync(path) ? { content: readFileSync(path, 'utf8'), mode: (statSync(path).mode & 0o777).toString(8).padStart(4, '0') } : null,
    };
  },
  probe: () => ({
    token: { command: `cat ${TOKEN_FILE}`, sudo: true, secret: true },
    kubeconfig: { command: `cat ${KUBECONFIG_FILE}`, sudo: true, secret: true },
  }),
  plan: ({ probe, local, ctx }) => {
    const changes: LocalChange[] = [];
    const secrets: string[] = [];
    const full = probe.token.code === 0 ? probe.token.stdout.trim() : '';
    const stored = local.token;
    if (full && stored && secretOf(full) === stored.secret && stored.full !== full) {
      secrets.push(full);
      changes.push(...tokenChange(ctx.stateDir, { ...stored, full }));
    }
    if (probe.kubeconfig.code === 0) {
      // The operator's copy dials the VIP (the HA address), once kube-vip announces it; behind a bastion it
      // also says how to reach that address from the operator's machine.
      const doc = parse(probe.kubeconfig.stdout);
      for (const c of doc?.clusters ?? []) c.cluster.server = ctx.inventory.derived.apiUrl;
      const content = operatorKubeconfig(doc, ctx.inventory, ctx.stateDir);
      // Written whole and 0600 even over an older copy of another mode (a rename, not a write in place).
      if (!keepsKubeconfig(local.kubeconfig, doc, content, ctx) || local.kubeconfig?.mode !== '0600') {
        changes.push({ kind: 'local', path: kubeconfigPath(ctx.stateDir), content, current: local.kubeconfig?.content ?? null, mode: '0600', secret: true });
      }
    }
    return secrets.length ? { changes, secrets } : { changes };
  },
};

/** A kept copy whose client certificate ends within this is replaced by the founder's (renewed ones are fetched long before they end). */
const RENEW_WITHIN_MS = 90 * 24 * 3600 * 1000;

/**
 * The state folder's kubeconfig stays when it is this one but for the admin credentials: every server
 * issues its own (so a run through another founder, as a founder replace has, would rewrite it at each
 * turn), and any one of them admits the operator while its certificate is not near its end.
 */
function keepsKubeconfig(
  local: StateFiles['kubeconfig'],
  doc: any,
  content: string,
  ctx: { inventory: Parameters<typeof operatorKubeconfig>[1]; stateDir: string; clock: { now(): number } },
): boolean {
  if (!local) return false;
  if (local.content === content) return true;
  let mine: any;
  try {
    mine = parse(local.content);
  } catch {
    return false; // a torn copy is written again whole from the founder's
  }
  const user = mine?.users?.[0]?.user;
  const cert = user?.['client-certificate-data'];
  if (!cert || !doc?.users?.[0]?.user) return false;
  const swapped = structuredClone(doc);
  swapped.users[0].user = { ...swapped.users[0].user, 'client-certificate-data': cert, 'client-key-data': user['client-key-data'] };
  if (operatorKubeconfig(swapped, ctx.inventory, ctx.stateDir) !== local.content) return false;
  try {
    return Date.parse(new X509Certificate(Buffer.from(cert, 'base64')).validTo) - ctx.clock.now() > RENEW_WITHIN_MS;
  } catch {
    return false;
  }
}

export const joinerIsVoter: Gate = {
  id: 'etcd-voter',
  title: 'joined as an etcd voter (EtcdIsVoter)',
  budgetMs: 300_000,
  async run(host, ctx, signal) {
    // Read through the server the joiner dials (join-target.ts): never the founder by name, which may be down.
    const founder = joinViaHost(ctx);
    const cursor = ctx.facts.get(host.name, journalCursor);
    const query = `get node ${host.name} -o jsonpath='{range .status.conditions[?(@.type=="EtcdIsVoter")]}{.status} {.reason}{end}'`;
    let voter = '';
    // The Node exists before the etcd leader's 15 s tick gives it an EtcdIsVoter condition.
    let registered = false;
    // A transient refusal (etcd not yet counting a fresh member healthy) is named only if it persists.
    let transientSince: number | undefined;
    let transient: ReturnType<typeof matchJoinFailure>;
    let quorumCheckedAt = -Infinity;
    let startPreSince: number | undefined;
    const joined = await poll(ctx, signal, {
      everyMs: POLL_MS,
      look: async () => {
        // The founder may be down (that is a cause the joiner's journal names): a failed query is no answer.
        // The Node is read through the run's SSH connection to that server, the condition picked here.
        const res = await apiRead(
          ctx,
          founder,
          { path: `/api/v1/nodes/${encodeURIComponent(host.name)}`, kubectl: `get node ${host.name} -o json` },
          10_000,
        ).catch(() => undefined);
        voter = res?.code === 0 ? etcdVoterOf(res.stdout) : '';
        registered ||= res?.code === 0;
        if (voter.startsWith('True')) return true;
        const journal = await journalSince(ctx, host, cursor);
        const known = matchJoinFailure(journal);
        if (!registered && !known) {
          const unit = await unitState(ctx, host);
          startPreSince = unit.startsWith('activating start-pre') ? (startPreSince ?? ctx.clock.now()) : undefined;
          if (startPreSince !== undefined && ctx.clock.now() - startPreSince > START_PRE_LIMIT_MS) {
            throw new CauseError('JOIN_STALLED', {
              host: host.name,
              message: `k3s never started on ${host.name}: its unit has been in start-pre (an ExecStartPre line that does not return) for more than ${START_PRE_LIMIT_MS / 1000} s`,
              evidence: { command: `systemctl show ${UNIT_STATE}`, seen: unit, excerpt: excerpt(journal) || "(nothing in k3s's journal since the start)" },
            });
          }
        }
        // etcd refuses the join for its health: if a majority of its members is down, waiting cannot help,
        // and the servers to bring back are named, not the joiner.
        if (known?.id === 'ETCD_CLUSTER_UNHEALTHY' && ctx.clock.now() - quorumCheckedAt >= QUORUM_CHECK_MS) {
          quorumCheckedAt = ctx.clock.now();
          const lost = quorumLost(await readServers(ctx, host));
          if (lost) throw quorumLostError(host.name, lost, known, journal);
        }
        if (known?.transient) {
          transientSince ??= ctx.clock.now();
          transient = known;
        } else {
          transientSince = undefined;
        }
        const persistent = known && (!known.transient || ctx.clock.now() - transientSince! > TRANSIENT_LIMIT_MS);
        if (known && persistent) {
          // The founder answering the operator while the joiner cannot reach it: the path between them is cut.
          const founderAnswers = res !== undefined && (res.code === 0 || NOT_FOUND.test(res.stderr));
          const unreachable =
            known.id === 'JOIN_FOUNDER_UNREACHABLE' && founderAnswers
              ? `${host.name} cannot reach ${joinTargetOf(ctx)}, while ${founder.name}'s API answers: the network between them drops or refuses it`
              : undefined;
          throw new CauseError(known.id, {
            host: host.name,
            message: known.detail ? `critical configuration mismatched: ${known.detail}` : unreachable,
            evidence: { command: 'journalctl -u k3s.service', seen: known.line, excerpt: excerpt(journal, 15) },
          });
        }
        return undefined;
      },
    });
    if (joined) return;
    const journal = await journalSince(ctx, host, cursor).catch(() => '');
    if (transient && transientSince !== undefined) {
      throw new CauseError(transient.id, {
        host: host.name,
        evidence: { command: 'journalctl -u k3s.service', seen: transient.line, excerpt: excerpt(journal, 15) },
      });
    }
    throw new CauseError(registered ? 'LEARNER_NOT_PROMOTED' : 'JOIN_STALLED', {
      host: host.name,
      evidence: {
        command: `k3s kubectl ${query}`,
        seen: registered ? `EtcdIsVoter is ${voter || 'not yet set'}` : `${host.name} is not registered as a node`,
        excerpt: excerpt(journal),
      },
    });
  },
};

/** A Node's EtcdIsVoter condition (src/k3s/nodes.ts) as `<status> <reason>`, what the evidence's jsonpath query prints. */
function etcdVoterOf(nodeJson: string): string {
  const c = nodesSeen([JSON.parse(nodeJson)])[0]?.etcdVoter;
  return c ? `${c.status ?? ''} ${c.reason ?? ''}`.trim() : '';
}

const UNIT_STATE = `-p ActiveState -p SubState -p ExecStartPre ${SERVER_ROLE.unit}`;

/**
 * The k3s unit's state as systemd words it ("activating start-pre", "active running", …) and, while it is in
 * start-pre, the ExecStartPre line still running (systemd prints each as `ExecStartPre={ path=… ; argv[]=… ;
 * … pid=… ; code=(null) … }`, code=(null) while it has not exited). The words are systemd's own: the state
 * names in systemd/systemd v252 (Debian 12's) src/basic/unit-def.c `service_state_table`, the ExecStartPre
 * record in src/shared/bus-print-properties.c / src/systemctl/systemctl-show.c; the lab hosts run that real
 * systemd, and the join-stalled fault row asserts the line it printed.
 */
async function unitState(ctx: RunContext, host: HostRef): Promise<string> {
  const r = await ctx
    .remote(host)
    .exec(`systemctl show ${UNIT_STATE}`, { readOnly: true, timeoutMs: 10_000, signal: ctx.signal })
    .catch((e: Error) => ({ code: null, stdout: '', stderr: e.message }));
  const lines = r.stdout.split('\n');
  const value = (key: string) => lines.find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1) ?? '';
  const running = lines
    .filter((l) => l.startsWith('ExecStartPre=') && l.includes('code=(null)'))
    .map((l) => /argv\[\]=([^;]*)/.exec(l)?.[1]?.trim())
    .filter(Boolean);
  const state = `${value('ActiveState')} ${value('SubState')}`.trim();
  return running.length && state === 'activating start-pre' ? `${state}; still running: ${running.join(', ')}` : state;
}

/** The stop for a join that waits on a cluster without quorum: it names the members that are down. */
function quorumLostError(joiner: string, lost: QuorumLost, refusal: JournalMatch, journal: string): CauseError {
  const names = lost.down.map((d) => d.name);
  const up = lost.members.length - lost.down.length;
  return new CauseError('ETCD_QUORUM_LOST', {
    host: names.join(', '),
    message: `etcd has lost quorum: ${up} of its ${lost.members.length} members answer, ${lost.needed} are needed; ${joiner} cannot join until ${names.join(' and ')} ${names.length === 1 ? 'is' : 'are'} back`,
    evidence: {
      command: `${MEMBER_PROBE} (on each other server); journalctl -u k3s.service on ${joiner}`,
      seen: `${lost.down.map((d) => `${d.name}: ${d.down}`).join('; ')}; ${joiner}: ${refusal.line}`,
      excerpt: excerpt(journal, 15),
    },
  });
}
