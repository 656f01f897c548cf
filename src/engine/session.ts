// One run against an environment: connect every host once, check sudo, take the locks, run the
// selected phases, and on the way out (done, stopped or Ctrl-C) release the locks, close the
// connections and leave the journal consistent.
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { userInfo, hostname } from 'node:os';
import { join } from 'node:path';
import { CauseError, causesOf, stopOf } from '../errors.ts';
import type { CommandLog, Remote, SshTarget, Transport } from '../transport/types.ts';
import { withDeadline } from '../util/deadline.ts';
import { eachLimited } from '../util/limit.ts';
import type { Clock } from './clock.ts';
import type { ApiGet, EngineContext, LoadedInventory, RunContext, Topology } from './context.ts';
import { Facts, type FactValue } from './facts.ts';
import type { EngineEvent, Emit, RunSummary } from './events.ts';
import { Journal } from './journal.ts';
import { forgettingClock, forgettingRemote, ProbeMemo } from './probe-memo.ts';
import { parallelismOf } from '../inventory/parallelism.ts';
import { closeFileMemo, openFileMemo } from '../util/file-memo.ts';
import { acquireLock, HEARTBEAT_S, LOCK_DIR, lockStateProbe, probesTrusted, refreshLock, releaseLock } from './lock.ts';
import type { HostRef, Phase, ProbeResults } from './phase.ts';
import { prefetchProbes } from './prefetch.ts';
import { Redactor, RunLog } from './run-log.ts';
import { InFlight } from './in-flight.ts';
import { RunReport } from './run-report.ts';
import { emptySummary, prepareAll, runPhases, type Waiver } from './run.ts';

export interface SessionDeps {
  transport: Transport;
  clock: Clock;
  emit: Emit;
  signal: AbortSignal;
  /**
   * Checks a fresh connection before use (sudo without a password); throws a CauseError. Not called for a run
   * that takes the host locks before anything else reaches the hosts: the lock goes through sudo and names
   * the same causes (src/engine/lock.ts), one round trip less per host. A --check takes no lock and may send
   * nothing through sudo on a host (`--only flux`), so it checks every connection: its verdict must hold for
   * the run it stands for. It does so beside its probes, not before them; a failed check is still its stop.
   */
  preflight?: (remote: Remote) => Promise<void>;
  /** The run's way to answer probes that read the API (RunContext.apiGet), recording them in `log`. */
  apiGet?: (ctx: RunContext, log: CommandLog) => ApiGet;
}

/** What a run does, assembled by a mode (modes/): the session runs it as it is. */
export interface RunPlan {
  /** The selected phases, in run order. */
  phases: Phase[];
  /** The servers' roles for this run; its servers and agents are every host to connect and lock. */
  topology: Topology;
  /** Check mode: probe and plan only; no lock is taken, no journal kept, nothing changed. */
  check: boolean;
  resume: boolean;
  /** Said before the run starts (the inventory's warnings, where a recovery ends). */
  warnings?: string[];
  /**
   * A read-only verdict before any lock or change, also in check mode, that must see hosts that do not
   * answer instead of stopping on them first (a replace judges quorum with servers down). With it, the
   * hosts' connection failures stop the run only after it passed.
   */
  precheck?: (ctx: RunContext) => Promise<FactValue<'run'>[] | void>;
  /** Run facts the mode decided (the operator's options for the phases, e.g. --no-backup), set before any phase. */
  facts?: FactValue<'run'>[];
}

export interface SessionOptions {
  env: string;
  inventory: LoadedInventory;
  target: (host: HostRef) => SshTarget;
  stateDir: string;
  waivers: Waiver[];
  /** Secrets already known before the run (token, keys): redacted from the first remote command on. */
  secrets?: string[];
  plan: RunPlan;
}

export interface SessionResult {
  summary: RunSummary;
  logFile: string;
  /** The run's HTML report; absent when it could not be written (a warning says why). */
  reportFile?: string;
  error?: unknown;
}

/** The state folder's file of facts derived from local files (sha256 sums, the k3s binary's version). */
const MEMO_FILE = 'derived-facts.json';

export async function runSession(deps: SessionDeps, opts: SessionOptions): Promise<SessionResult> {
  const { plan } = opts;
  const runId = `${new Date(deps.clock.now()).toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
  const redactor = new Redactor();
  for (const s of opts.secrets ?? []) redactor.add(s);
  const log = new RunLog(join(opts.stateDir, 'runs', `${runId}.log`), redactor);
  // The report is one more view of the run's events: everything the renderers get, it gets first.
  const report = new RunReport(join(opts.stateDir, 'runs', `${runId}.html`), runId, deps.clock, redactor);
  const emit: Emit = (e) => {
    report.record(e);
    deps.emit(e);
  };
  // Every remote command goes to the run log and, as written there, to the views (--json prints it); a
  // command still ending after run-end (a wait that ignored its budget) is in the log only: run-end is last.
  // The report draws phases, steps and gates, not commands: they go to the renderers only.
  let ended = false;
  const inFlight = new InFlight(
    () => deps.clock.now(),
    (t) => redactor.apply(t),
  );
  const commands: CommandLog = {
    record: (e) => {
      const shown = log.record(e);
      if (!ended) deps.emit({ type: 'command', ...shown });
    },
    started: inFlight.started,
  };
  let journal: Journal | undefined;
  // Sums and other facts derived from the operator's local files, kept from earlier runs (src/util/file-memo.ts).
  openFileMemo(join(opts.stateDir, MEMO_FILE));

  const remotes = new Map<string, Remote>();
  const unreachable = new Map<string, unknown>();
  const locked: Remote[] = [];
  // Only a run that holds the locks writes the journal: one refused with LOCK_HELD must not overwrite the
  // journal of the run that holds them (its --resume would lose that run's progress).
  let ownsRun = false;
  let heartbeat: NodeJS.Timeout | undefined;
  // A lock this run held and lost (another run's record in its place, found by a refresh): the run stops
  // with LOCK_LOST instead of going on beside that run. Its steps see the stop through their signal.
  let lockLost: CauseError | undefined;
  // Stops the phases from inside the session: a lost lock, or a --check's failed sudo check.
  const stopAbort = new AbortController();
  const signal = AbortSignal.any([deps.signal, stopAbort.signal]);
  // Every host's concurrent commands, waits and connections listen on the run's signal and let go when they
  // end: their number grows with the hosts (eleven at seven hosts), it is no leak, so Node's warning past ten is off.
  setMaxListeners(0, signal, deps.signal);
  const result: SessionResult = { logFile: log.file, summary: emptySummary(plan.check) };
  const started = deps.clock.now();
  const needed = neededHosts(opts);
  const others = allHosts(plan.topology).filter((h) => !needed.some((n) => n.name === h.name));
  // A --check takes no lock; a precheck reads the hosts before the locks are taken: their hosts are checked
  // when they connect. A run's lock is its sudo check.
  const checkEachConnection = plan.check || plan.precheck !== undefined;
  // A plain --check does not wait for the sudo checks before its probes: they go out on the same connections
  // at once (the first command on a connection pays for the login session, the others follow it), and a
  // failed check still stops the run with its own cause (below). Nothing a --check sends changes a host.
  const overlapChecks = plan.check && plan.precheck === undefined;
  const pendingChecks: Promise<void>[] = [];
  try {
    for (const message of plan.warnings ?? []) emit({ type: 'warning', message });
    emit({ type: 'run-start', env: opts.env, check: plan.check, phases: plan.phases.map((p) => p.id), waivers: opts.waivers });
    journal = plan.check ? undefined : new Journal(opts.stateDir, runId, { resume: plan.resume, now: new Date(deps.clock.now()) });
    if (plan.resume && journal && !journal.resuming)
      emit({ type: 'warning', message: 'nothing to resume: the previous run finished (or none was recorded); running every phase' });
    const facts = new Facts();
    if (plan.facts) facts.setRun(plan.facts);
    const probeMemo = new ProbeMemo();
    const phaseRemotes = new Map<string, Remote>();
    const ctx: EngineContext = {
      env: opts.env,
      check: plan.check,
      inventory: opts.inventory,
      remote: (host) => {
        const r = remotes.get(host.name);
        if (r) {
          if (!phaseRemotes.has(host.name)) phaseRemotes.set(host.name, forgettingRemote(r, probeMemo));
          return phaseRemotes.get(host.name)!;
        }
        const err = unreachable.get(host.name);
        if (err) throw err;
        throw new Error(`no connection to ${host.name}: it is not in the inventory`);
      },
      clock: forgettingClock(deps.clock, probeMemo),
      emit,
      signal,
      stateDir: opts.stateDir,
      facts,
      probeMemo,
      once: (fact, compute) => facts.once(fact, compute),
      redact: (s) => redactor.add(s),
      topology: plan.topology,
      log: commands,
      inFlight,
    };
    ctx.apiGet = deps.apiGet?.(ctx, commands);
    // The phases' local preparation (the state folder's token, the k3s binary's version, Cilium's values
    // from the GitOps repository) before any host is dialled: a torn token or an unresolved variable stops
    // the run without a single connection.
    await prepareAll(plan.phases, ctx, result.summary);
    const connectErrors = await eachLimited(needed, parallelismOf(opts.inventory), async (host) => {
      try {
        const remote = await deps.transport.connect(opts.target(host), { signal: deps.signal, log: commands });
        remotes.set(host.name, remote);
        const checked = checkEachConnection ? deps.preflight?.(remote) : undefined;
        if (checked && overlapChecks) {
          pendingChecks.push(checked);
          // Read with the others after the phases started; never an unhandled rejection meanwhile.
          checked.catch(() => undefined);
        } else await checked;
      } catch (err) {
        unreachable.set(host.name, err);
        throw err;
      }
    });
    if (!plan.precheck) throwAll(connectErrors);
    // Hosts the selected phases only read from (the founder, for a join) are connected too, but one that
    // does not answer is not a stop here: the phase that needs it names the cause when it uses it.
    await eachLimited(others, parallelismOf(opts.inventory), async (host) => {
      try {
        const remote = await deps.transport.connect(opts.target(host), { signal: deps.signal, log: commands });
        remotes.set(host.name, remote);
      } catch (err) {
        unreachable.set(host.name, err);
        emit({
          type: 'warning',
          host: host.name,
          message: `not reachable (${causesOf(err)[0]?.causeId ?? (err as Error).message}); phases that read from it will stop`,
        });
      }
    });
    if (plan.precheck) {
      const found = await plan.precheck(ctx);
      if (found) facts.setRun(found);
      throwAll(connectErrors);
    }
    // A run's probes go out beside its lock acquires, not after them (the acquire waits for each host's login
    // session; the probes share the wait on the same connection), and are kept only when each host's acquire
    // shows that no other run held or took the lock meanwhile (src/engine/lock.ts probesTrusted). The acquire
    // is still the run's sudo check: a batch through sudo that sudo refuses is only not kept. A precheck's facts
    // change what the phases probe: those runs ask after the locks, as a --check does.
    const ahead =
      !plan.check && !plan.precheck
        ? prefetchProbes(plan.phases, ctx, { lead: (sudo) => [LOCK_AHEAD[sudo ? 'root' : 'user'], lockStateProbe(sudo)] })
        : undefined;
    const acquireNumbers = new Map<string, number | undefined>();
    if (!plan.check) {
      const who = `${userInfo().username}@${hostname()}`;
      const lockErrors = await eachLimited([...remotes.values()], parallelismOf(opts.inventory), async (remote) => {
        // Released on the way out even when the acquire did not answer (a timeout or Ctrl-C after its
        // rename): a release removes only a lock whose owner record is this run's.
        locked.push(remote);
        const { tookOverStale, acquireNumber } = await acquireLock(remote, { runId, who }, { signal: deps.signal });
        acquireNumbers.set(remote.host, acquireNumber);
        if (tookOverStale)
          emit({
            type: 'warning',
            host: remote.host,
            message: `took over a stale lock of run ${tookOverStale.runId} (${tookOverStale.who}): not refreshed since ${new Date(tookOverStale.since * 1000).toISOString()}`,
          });
      });
      throwAll(lockErrors);
      ownsRun = true;
      heartbeat = setInterval(() => {
        for (const remote of locked) {
          void refreshLock(remote, runId).then((held) => {
            if (held || lockLost) return;
            lockLost = new CauseError('LOCK_LOST', {
              host: remote.host,
              message: `${remote.host}: ${LOCK_DIR} is no longer this run's`,
              evidence: {
                seen: `the owner record of ${LOCK_DIR} on ${remote.host} names another run (or none), not ${runId}`,
                command: `sudo cat ${LOCK_DIR}/owner`,
              },
            });
            // The other run keeps the journal now: this one must not overwrite it on the way out.
            ownsRun = false;
            stopAbort.abort(lockLost);
          });
        }
      }, HEARTBEAT_S * 1000);
      heartbeat.unref();
    }
    if (ahead && !(await probedUnderLock(ahead, acquireNumbers, runId))) probeMemo.forget();
    const phasesRun = runPhases({ phases: plan.phases, ctx, journal, waivers: opts.waivers, summary: result.summary, prepared: true, prefetched: !!ahead });
    // Awaited below; a rejection before that must not count as unhandled.
    phasesRun.catch(() => undefined);
    if (pendingChecks.length) {
      const failedChecks = (await Promise.allSettled(pendingChecks)).flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      if (failedChecks.length) {
        // The run stops with the checks' causes; what the phases meet without sudo meanwhile is not the news.
        stopAbort.abort(failedChecks[0]);
        await phasesRun.catch(() => undefined);
        throwAll(failedChecks);
      }
    }
    await phasesRun;
    if (lockLost) throw lockLost;
    journal?.finish();
  } catch (thrown) {
    // Never let a failure read as success: a missing error object is itself a bug to report.
    const err = thrown ?? new Error('a phase failed without an error object (a bug)');
    // A check run keeps no journal: there is nothing to --resume, the same command runs again from the start.
    const interrupted = () =>
      new CauseError('INTERRUPTED', {
        evidence: { seen: 'Ctrl-C' },
        ...(plan.check && { remedy: 'Run the same command again: a check run changes nothing and keeps no journal, so there is nothing to --resume.' }),
      });
    result.error = lockLost ?? (deps.signal.aborted && causesOf(err).length === 0 ? interrupted() : err);
    result.summary.stopped = Math.max(1, result.summary.stopped);
    for (const c of causesOf(result.error)) {
      log.note(`stopped: ${c.causeId} ${c.host ?? ''} ${JSON.stringify(c.evidence)}`);
      emit({ type: 'stopped', error: JSON.parse(redactor.apply(JSON.stringify(c.toJSON()))) });
    }
    if (ownsRun) journal?.save();
  } finally {
    clearInterval(heartbeat);
    await Promise.all(
      locked.map(async (r) => {
        if (await releaseLock(r, runId)) return;
        // The run's connection to this host was lost (an SSH drop, sshd restarted, a blip): one fresh
        // connection, bounded, releases the lock, or the next run is refused (LOCK_HELD) until it goes stale.
        // Not after Ctrl-C: the operator asked to stop, and a host that is gone would hold the exit.
        if (deps.signal.aborted) return;
        const host = allHosts(plan.topology).find((h) => h.name === r.host);
        if (host) await releaseOverFreshConnection(deps.transport, opts.target(host), runId, deps.signal, commands);
      }),
    );
    await Promise.all([...remotes.values()].map((r) => r.close().catch(() => undefined)));
    closeFileMemo();
  }
  result.summary.durationMs = deps.clock.now() - started;
  const end: Extract<EngineEvent, { type: 'run-end' }> = { type: 'run-end', summary: result.summary, logFile: log.file, reportFile: report.file };
  report.record(end);
  try {
    report.write();
    result.reportFile = report.file;
  } catch (err) {
    // The report is a view: a full disk or a read-only folder costs the page, never the run's outcome.
    delete end.reportFile;
    deps.emit({ type: 'warning', message: `the run report could not be written: ${(err as Error).message}` });
  }
  ended = true;
  deps.emit(end);
  return result;
}

/** The hosts the selected phases run on or probe: each must answer, or the run stops before any change. */
function neededHosts(opts: SessionOptions): HostRef[] {
  const names = new Set<string>();
  const c = { inventory: opts.inventory, topology: opts.plan.topology };
  for (const p of opts.plan.phases) {
    if (!p.hostsMayBeDown) for (const h of p.hosts(c)) names.add(h.name);
    if (!p.preflight?.mayBeDown) for (const h of p.preflight?.hosts?.(c) ?? []) names.add(h.name);
  }
  return allHosts(opts.plan.topology).filter((h) => names.has(h.name));
}

/** The keys of the lock's state in the batches sent beside the acquire (as the user, through sudo). */
const LOCK_AHEAD = { user: 'lock.state', root: 'lock.state.sudo' };

/**
 * Whether every host's probes sent beside the acquires can be kept: each batch's lock state vouches for it
 * against its host's acquire (src/engine/lock.ts probesTrusted). A host whose answers did not all come is no
 * proof either way: everything is asked again.
 */
async function probedUnderLock(
  ahead: Map<string, Promise<ProbeResults | undefined>>,
  acquireNumbers: Map<string, number | undefined>,
  runId: string,
): Promise<boolean> {
  const hosts = await Promise.all(
    [...ahead].map(async ([host, answers]) => {
      const seen = await answers;
      if (!seen?.[LOCK_AHEAD.user]) return false;
      return Object.values(LOCK_AHEAD).every((k) => !seen[k] || (seen[k].code === 0 && probesTrusted(seen[k].stdout, acquireNumbers.get(host), runId)));
    }),
  );
  return hosts.every(Boolean);
}

/** Every host of the environment, for connections and locks. */
const allHosts = (t: Topology): HostRef[] => [...t.servers, ...t.agents];

function throwAll(errors: unknown[]): void {
  if (errors.length) throw stopOf(errors);
}

/** How long the way out waits for a fresh connection to release a lock whose own connection was lost. */
const RELEASE_RECONNECT_MS = 20_000;

async function releaseOverFreshConnection(transport: Transport, target: SshTarget, runId: string, signal: AbortSignal, log: CommandLog): Promise<void> {
  try {
    const fresh = await transport.connect(target, { signal: withDeadline(signal, RELEASE_RECONNECT_MS), log });
    try {
      await releaseLock(fresh, runId);
    } finally {
      await fresh.close().catch(() => undefined);
    }
  } catch {
    // The host is gone (powered off, cut off): its lock stays until it goes stale or the host reboots.
  }
}
