// Reading the cluster for verify, over the run's SSH connections: the cluster's objects through the
// Kubernetes API of any server that answers (the founder first), and what only a host can tell (its own view
// of the API, etcd's member list, the Cilium agent's status) as several read-only commands in one batch.
import { CauseError, stopOf } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { Gate, HostRef, ProbeCommand, ProbeResults } from '../../src/engine/phase.ts';
import { probeBatch } from '../../src/engine/probes.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import type { ClusterReads } from '../../src/kube/get-reads.ts';
import { readsThrough } from '../../src/kube/reads-through.ts';
import { poll } from '../../src/engine/poll.ts';

export const VERIFY_PHASE = 'verify';
const POLL_MS = 3_000;

export type ClusterRead<T> = { ok: true; vantage: HostRef; value: T } | { ok: false; seen: string };

/**
 * One read of the cluster (`read`: what it asks of the API) through the first server whose API answers, the
 * founder first: through the Kubernetes API over the run's SSH connection to that server
 * (src/kube/api-access.ts); every server's failure when none answers.
 */
export async function readCluster<T>(ctx: RunContext, read: (api: ClusterReads) => Promise<T>): Promise<ClusterRead<T>> {
  const failures: string[] = [];
  const servers = serverRefs(ctx.inventory).sort((a, b) => Number(b.founder) - Number(a.founder));
  const otherCa: CauseError[] = [];
  for (const server of servers) {
    try {
      return { ok: true, vantage: server, value: await read(await readsThrough(ctx, server)) };
    } catch (err) {
      // A damaged kubeconfig in the state folder is the operator's to fix, whichever server is asked.
      if (err instanceof CauseError && err.causeId === 'STATE_FILE_CORRUPT') throw err;
      if (err instanceof CauseError && err.causeId === 'KUBECONFIG_CA_MISMATCH') otherCa.push(err);
      failures.push(`${server.name}: ${err instanceof CauseError ? (err.evidence.seen ?? err.message) : (err as Error).message}`);
    }
  }
  // Every server answered with a certificate of another CA: the kubeconfig is another cluster's, and waiting
  // changes nothing. (One server alone of another CA is read past: another server answers.)
  if (otherCa.length && otherCa.length === servers.length)
    throw new CauseError('KUBECONFIG_CA_MISMATCH', {
      host: servers[0].name,
      message: "no server's API certificate is verified by the state folder's kubeconfig: it is another cluster's",
      evidence: { command: otherCa[0].evidence.command, seen: failures.join('; ') },
    });
  return { ok: false, seen: failures.join('; ') };
}

/**
 * Several read-only commands on one host in one remote execution (root: k3s.yaml and the etcd keys are 0600);
 * `concurrent`: at once (src/engine/probe-batch.ts).
 */
export async function batch(
  ctx: RunContext,
  host: HostRef,
  commands: Record<string, string | ProbeCommand>,
  o: { concurrent?: boolean } = {},
): Promise<ProbeResults> {
  const probes = Object.fromEntries(Object.entries(commands).map(([k, c]) => [k, typeof c === 'string' ? { command: c } : c]));
  const keys = Object.keys(probes);
  try {
    return (await probeBatch(host, ctx, probes, { sudo: true, timeoutMs: 30_000, concurrent: o.concurrent })).results;
  } catch (err) {
    const why = `cannot run on ${host.name}: ${(err as Error).message}`;
    return Object.fromEntries(keys.map((k) => [k, { stdout: '', stderr: why, code: null }]));
  }
}

export interface Row {
  host: string;
  ok: boolean;
  detail: string;
}

export interface Verdict {
  rows: Row[];
  stops: CauseError[];
  /** The stops describe a state nothing in the cluster will change by itself (an operator's setting): no more looks. */
  final?: boolean;
}

/** A check of verify: what it is, and one look at the cluster (read-only) judged as a verdict. */
export interface Check {
  id: string;
  title: string;
  budgetMs: number;
  look: (host: HostRef, ctx: RunContext) => Promise<Verdict>;
  /** Called when the check's turn begins, before its looks: a check that carries what it saw from look to look starts afresh. */
  begin?: (ctx: RunContext) => void;
}

/** A first look older than this when its check's turn comes is not taken: the check looks again. */
const FRESH_MS = 10_000;

type Taken = { verdict: Verdict; atMs: number };

/**
 * Per run: each check's first look, all started together (when the run starts, phases/verify.ts lookAhead, or
 * else when the first check's turn comes), so that the checks' reads (on every host, each mostly waiting on a
 * remote process) overlap instead of queueing. Each is taken once, by its check's first look, and only when it
 * passed, is fresh, and the run's probe memo has forgotten nothing since the looks began (`mark`: nothing
 * applied, written or waited for since, src/engine/probe-memo.ts): a look from before a change says nothing
 * about the cluster after it.
 */
const firstLooks = new WeakMap<RunContext, { mark: number | undefined; looks: Map<string, Promise<Taken | undefined>> }>();

/** Starts every check's first look, unless looks started since the run's last change are on their way. */
export function startLooks(ctx: RunContext, host: HostRef, checks: Check[]): void {
  const mark = ctx.probeMemo?.mark();
  const started = firstLooks.get(ctx);
  if (started && started.mark === mark) return;
  const looks = new Map<string, Promise<Taken | undefined>>();
  for (const c of checks)
    looks.set(
      c.id,
      c.look(host, ctx).then(
        (verdict) => ({ verdict, atMs: ctx.clock.now() }),
        // Looked at again in the check's turn, which then meets the same failure itself.
        () => undefined,
      ),
    );
  firstLooks.set(ctx, { mark, looks });
}

async function takeFirstLook(ctx: RunContext, id: string): Promise<Verdict | undefined> {
  const started = firstLooks.get(ctx);
  const look = started?.looks.get(id);
  if (!look) return undefined;
  started!.looks.delete(id);
  const taken = await look;
  const current = started!.mark === ctx.probeMemo?.mark();
  return current && taken && !taken.verdict.stops.length && ctx.clock.now() - taken.atMs < FRESH_MS ? taken.verdict : undefined;
}

/** A check as a read-only gate of the engine (src/engine/phase.ts): it settles (below) on its looks. */
export function checkGate(c: Check): Gate & Check {
  return {
    ...c,
    readOnly: true,
    run: (host, ctx, signal) => {
      c.begin?.(ctx);
      return settle(ctx, signal, c, async () => (await takeFirstLook(ctx, c.id)) ?? c.look(host, ctx));
    },
  };
}

/**
 * Looks until the verdict has no stop, is final, or the budget (less the time of one look) runs out, then prints
 * the table's rows for this check and stops with the causes of the last look.
 */
async function settle(
  ctx: RunContext,
  signal: AbortSignal,
  check: { id: string; title: string; budgetMs: number },
  look: () => Promise<Verdict>,
): Promise<void> {
  const deadline = ctx.clock.now() + check.budgetMs - 20_000;
  let v: Verdict = { rows: [], stops: [] };
  await poll(ctx, signal, {
    everyMs: POLL_MS,
    look: async () => {
      v = await look();
      return !v.stops.length || v.final || ctx.clock.now() >= deadline || undefined;
    },
  });
  for (const r of v.rows) ctx.emit({ type: 'check', phase: VERIFY_PHASE, check: check.id, title: check.title, host: r.host, ok: r.ok, detail: r.detail });
  if (v.stops.length) throw stopOf(v.stops);
}

export { lastLine } from '../../src/kube/reads-through.ts';
