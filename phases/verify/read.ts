// Reading the cluster for verify, over the run's SSH connections: through any server that answers (the
// founder first), and running several read-only commands on one host as one batch.
import { type CauseError, stopOf } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { probeBatch } from '../../src/engine/probes.ts';
import type { ExecResult } from '../../src/transport/types.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { kubectl } from '../../src/k3s/remote.ts';
import { poll } from '../../src/engine/poll.ts';

export const VERIFY_PHASE = 'verify';
const POLL_MS = 3_000;

/** `k3s kubectl <args>` on the first server whose API answers; the last failure when none does. */
export async function readCluster(ctx: RunContext, args: string): Promise<{ ok: true; vantage: HostRef; res: ExecResult } | { ok: false; seen: string }> {
  const failures: string[] = [];
  for (const server of serverRefs(ctx.inventory).sort((a, b) => Number(b.founder) - Number(a.founder))) {
    try {
      const res = await kubectl(ctx, server, `${args} --request-timeout=5s`, 10_000);
      if (res.code === 0) return { ok: true, vantage: server, res };
      failures.push(`${server.name}: ${(res.stderr || res.stdout).trim().split('\n').at(-1) || `exit ${res.code}`}`);
    } catch (err) {
      failures.push(`${server.name}: ${(err as Error).message}`);
    }
  }
  return { ok: false, seen: failures.join('; ') };
}

/** Several read-only commands on one host in one remote execution (root: k3s.yaml and the etcd keys are 0600). */
export async function batch(ctx: RunContext, host: HostRef, commands: Record<string, string>): Promise<ProbeResults> {
  const probes = Object.fromEntries(Object.entries(commands).map(([k, command]) => [k, { command }]));
  const keys = Object.keys(probes);
  try {
    return (await probeBatch(host, ctx, probes, { sudo: true, timeoutMs: 30_000 })).results;
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

/**
 * Looks until the verdict has no stop, is final, or the budget (less the time of one look) runs out, then prints
 * the table's rows for this check and stops with the causes of the last look.
 */
export async function settle(
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

export const lastLine = (r: { stdout: string; stderr: string; code: number | null }) =>
  (r.stderr || r.stdout).trim().split('\n').at(-1) || (r.code === null ? 'no answer' : `exit ${r.code}`);
