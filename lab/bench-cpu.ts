// Where a converged run's time goes on the lab, in CPU: every lab host is a set of processes on this one
// machine, so a run of 30 hosts is bound by the machine's cores long before it is bound by the engine. The
// bench measures, with the hosts' cgroups (lab/cgroups.ts hostCpuMs):
// - what the cluster burns while nothing runs (etcd, the twins, each host's systemd): the idle cores;
// - each host's CPU during a converged run, less its idle share: what the run itself costs on the hosts;
// - a bare SSH login (`ssh … true`, the least a run can do on a host) on each agent, and a login that runs
//   `sudo -n true` (the least a run does on a host whose files only root may read: k3s's config.yaml is 0600);
// and from them the wall time no run can beat on this machine: the run's CPU (the hosts' share above idle
// plus the engine's own) over the cores the idle cluster leaves. The same floor with nothing but a login on
// each agent says what the lab allows whatever the tool does on its agents; with a login and one sudo, what
// it allows a tool that reads each agent's state as root at all.
import { availableParallelism } from 'node:os';
import { hosts, ssh } from './api.ts';
import { medianOf } from './bench-run.ts';
import { hostCpuMs } from './cgroups.ts';
import { sleep } from './run.ts';

/** Each host's CPU so far (ms), by name. */
function snapshot(names: string[]): Map<string, number> {
  return new Map(names.map((n) => [n, hostCpuMs(n) ?? NaN]));
}

function deltas(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...before].map(([n, ms]) => [n, after.get(n)! - ms]));
}

/** Each host's idle rate: the CPU it uses per millisecond of wall time while no run is on (cores). */
export async function idleRates(windowMs = 5_000): Promise<Map<string, number>> {
  const names = hosts().map((h) => h.name);
  const before = snapshot(names);
  const t0 = Date.now();
  await sleep(windowMs);
  const used = deltas(before, snapshot(names));
  const wall = Date.now() - t0;
  return new Map([...used].map(([n, ms]) => [n, ms / wall]));
}

/** Each host's CPU above its idle rate while `fn` runs (ms), and `fn`'s result. */
export async function cpuAboveIdle<T>(idle: Map<string, number>, fn: () => Promise<T>): Promise<{ result: T; hostsMs: Map<string, number> }> {
  const names = [...idle.keys()];
  const before = snapshot(names);
  const t0 = Date.now();
  const result = await fn();
  const wall = Date.now() - t0;
  const used = deltas(before, snapshot(names));
  return { result, hostsMs: new Map([...used].map(([n, ms]) => [n, ms - idle.get(n)! * wall])) };
}

/** An SSH login running `command` (default: a bare login) on each of `names`, one after another: each host's CPU for it above idle (ms). */
export async function loginCpu(idle: Map<string, number>, names: string[], command = 'true'): Promise<number[]> {
  const out: number[] = [];
  for (const name of names) {
    const { hostsMs } = await cpuAboveIdle(new Map([[name, idle.get(name)!]]), async () => {
      const r = await ssh(name, command);
      if (r.code !== 0) throw new Error(`ssh ${name} ${command}: exit ${r.code}: ${r.stderr.trim()}`);
    });
    out.push(hostsMs.get(name)!);
  }
  return out;
}

/** What a converged run costs in CPU and the wall time that leaves no run below, on this machine. */
export interface CpuBudget {
  cores: number;
  idleCores: number;
  /** The servers' CPU above idle during the run, together (ms). */
  serversMs: number;
  /** Each agent's CPU above idle during the run (ms). */
  agentsMs: number[];
  /** The engine process's own CPU (ms). */
  engineMs: number;
  /** A bare SSH login's CPU on each agent (ms). */
  loginMs: number[];
  /** A login that runs `sudo -n true`, on each agent (ms). */
  sudoMs: number[];
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The budget of a run from each host's idle rate and its CPU above idle during the run, the agents named. */
export function budgetOf(
  idle: Map<string, number>,
  hostsMs: Map<string, number>,
  agents: string[],
  engineMs: number,
  logins: { loginMs: number[]; sudoMs: number[] },
): CpuBudget {
  const of = (agent: boolean) => [...hostsMs].filter(([n]) => agents.includes(n) === agent).map(([, ms]) => ms);
  return { cores: availableParallelism(), idleCores: sum([...idle.values()]), serversMs: sum(of(false)), agentsMs: of(true), engineMs, ...logins };
}

/**
 * The wall time the run's CPU needs at least on the cores the idle cluster leaves (ms). The servers' share
 * counts as none when negative: a run that keeps the cores busy starves the servers' background work, which
 * then uses less than its idle rate while the run lasts; counting that as none only lowers the floor.
 */
function floorMs(b: CpuBudget, agentMs = (ms: number) => ms): number {
  return (Math.max(0, b.serversMs) + b.engineMs + sum(b.agentsMs.map(agentMs))) / (b.cores - b.idleCores);
}

/** The floor were each agent to cost no more than a bare login (the median one), or with `sudo`, a login that runs one sudo. */
export function loginFloorMs(b: CpuBudget, sudo = false): number {
  const login = medianOf(sudo ? b.sudoMs : b.loginMs);
  return floorMs(b, () => login);
}

/**
 * The CPU each agent may cost for a run to end within `targetMs` on this machine, with the idle cluster, the
 * servers and the engine as measured (ms; negative: not even with agents that cost nothing).
 */
export function agentAllowanceMs(b: CpuBudget, targetMs: number): number {
  return (targetMs * (b.cores - b.idleCores) - Math.max(0, b.serversMs) - b.engineMs) / b.agentsMs.length;
}

/** The budget's line in the bench table. */
export function budgetLine(b: CpuBudget): string {
  const ms = (x: number) => `${Math.round(x)} ms`;
  const agents = b.agentsMs.length
    ? `; agents ${ms(medianOf(b.agentsMs))} each (median; a bare SSH login ${ms(medianOf(b.loginMs))}, one running sudo -n true ${ms(medianOf(b.sudoMs))})`
    : '';
  return (
    `idle cluster ${b.idleCores.toFixed(2)} of ${b.cores} cores; the run above idle: servers ${ms(b.serversMs)}${agents}, ` +
    `engine ${ms(b.engineMs)}; floor ${(floorMs(b) / 1000).toFixed(2)} s`
  );
}
