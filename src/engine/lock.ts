// One run at a time per host: a lock directory in /run/lock on the host (a tmpfs emptied at boot, so a
// rebooted host holds no lock; sticky and world-writable, so the SSH user who owns the lock can release it
// without root when sudo was taken away mid-run, while no other user can remove or replace it). Every
// step that decides who holds it is one rename(2) on the host, so two runs racing for it can never both win:
// - acquire: the lock is built aside (`<dir>.new.<run>`, owner record inside) and renamed into place;
//   rename onto an existing lock fails, so the lock never exists without its owner record;
// - staleness is judged on the host's own clock: the holder refreshes its record every HEARTBEAT_S (the
//   session does), and a record older than STALE_AFTER_S belongs to a run that died;
// - take-over: the stale lock is renamed aside (only one taker can move a given directory) and its owner
//   compared with the one judged stale; a taker that moved a fresh lock by mistake puts it back;
// - acquires on one host run one at a time (flock on `<dir>.acquire`, released by the kernel when the
//   script ends or dies): without it, with three runs, a taker's mistaken move could empty the place, a
//   third run fill it, and the put-back fail, leaving two runs that believe they hold the lock;
// - a holder whose refresh finds another run's record (or none) has lost the lock: the session stops
//   with LOCK_LOST rather than go on beside another run;
// - every acquire adds a byte to `<dir>.acquire` under that flock and says how many came before it: the
//   probes a run sends beside its acquire read the count and whether a run holds the lock first, and are kept
//   only when no other run held or took it in between (lockStateProbe, probesTrusted).
import { CauseError } from '../errors.ts';
import { connectionLost } from '../transport/lost.ts';
import { sudoRefusal } from '../transport/sudo.ts';
import type { Remote } from '../transport/types.ts';
import type { ProbeCommand } from './probe-types.ts';
import { shq } from '../util/shell.ts';

export const LOCK_DIR = '/run/lock/bootstrap.lock';
/** Taking the lock on one host (the script's tries included). */
export const LOCK_ACQUIRE_BUDGET_MS = 30_000;
/** How often a holder refreshes its owner record. */
export const HEARTBEAT_S = 60;
/** A record not refreshed for this long belongs to a dead run (ten missed heartbeats). */
const STALE_AFTER_S = 10 * 60;

export interface LockOwner {
  runId: string;
  who: string;
}

export interface LockOptions {
  /** The lock directory (tests point it elsewhere). */
  dir?: string;
  staleAfterS?: number;
  signal?: AbortSignal;
}

const TRIES = 5;
/** How long an acquire waits for another acquire on the same host (well inside LOCK_ACQUIRE_BUDGET_MS). */
const ACQUIRE_MUTEX_WAIT_S = 20;

function acquireScript(owner: LockOwner, opts: LockOptions = {}): string {
  const stale = opts.staleAfterS ?? STALE_AFTER_S;
  return `
d=${shq(opts.dir ?? LOCK_DIR)}; me=${shq(owner.runId)}; who=${shq(owner.who)}
t="$d.new.$me"; g="$d.stale.$me"; took=
p="\${d%/*}"; [ -d "$p" ] || mkdir -m 1777 "$p" || exit 4
# One acquire at a time on the host: a taker that read a stale record must not move a lock another taker
# has just put in its place while a third fills the emptied place. The kernel drops the flock with the
# process, so a run that dies here blocks nobody.
command -v flock >/dev/null || { echo "flock (util-linux) is not installed on this host"; exit 6; }
exec 9>>"$d.acquire" || exit 4
flock -w ${ACQUIRE_MUTEX_WAIT_S} 9 || { echo contended; exit 5; }
# Counts the acquires (a byte each, the lost ones too), and says this one's number first: the run's probes
# asked beside the acquire are trusted only when no other acquire came between them and this one (lockStateProbe).
n=$(wc -c < "$d.acquire") && printf . >&9 || exit 4
echo "acquire $((n))"
# Leftovers of an acquire of this run cut short (rare: rm is not started for nothing).
{ [ ! -e "$t" ] && [ ! -e "$g" ]; } || rm -rf "$t" "$g"; mkdir -m 700 "$t" || exit 4
printf '%s %s %s\\n' "$me" "$(date +%s)" "$who" > "$t/owner" || exit 4
# Owned by the SSH user (sudo names it): the lock's own user may release it without root.
[ -z "$SUDO_UID" ] || chown "$SUDO_UID" "$t" "$t/owner" || exit 4
i=0
while [ $i -lt ${TRIES} ]; do
  i=$((i + 1))
  if mv -T "$t" "$d" 2>/dev/null; then
    if [ -n "$took" ]; then echo "stale $took"; else echo acquired; fi; exit 0
  fi
  read oid obeat owho < "$d/owner" 2>/dev/null || continue
  if [ "$oid" = "$me" ]; then rm -rf "$t"; echo acquired; exit 0; fi
  if [ $(( $(date +%s) - \${obeat:-0} )) -le ${stale} ]; then rm -rf "$t"; echo "held $oid $obeat $owho"; exit 3; fi
  mv -T "$d" "$g" 2>/dev/null || continue
  read gid gbeat gwho < "$g/owner" 2>/dev/null
  if [ "$gid $gbeat" = "$oid $obeat" ]; then rm -rf "$g"; took="$oid $obeat $owho"; else mv -T "$g" "$d" 2>/dev/null; fi
done
rm -rf "$t"; echo contended; exit 5`;
}

export async function acquireLock(
  remote: Remote,
  owner: LockOwner,
  opts: LockOptions = {},
): Promise<{ tookOverStale?: { runId: string; since: number; who: string }; acquireNumber?: number }> {
  const dir = opts.dir ?? LOCK_DIR;
  const res = await remote.exec(`sh -c ${shq(acquireScript(owner, opts))}`, { sudo: true, timeoutMs: LOCK_ACQUIRE_BUDGET_MS, signal: opts.signal });
  if (res.lost) throw connectionLost(remote.host, `acquire ${dir}`);
  // The run's sudo check: the lock is its first command through sudo (src/transport/sudo.ts sudoRefusal); its
  // script ends with its own statuses (0, 3 to 6), never 127.
  const refused = sudoRefusal(remote.host, `sudo -n sh -c '<acquire ${dir}>'`, res);
  if (refused) throw refused;
  const lines = res.stdout.trim().split('\n');
  const counted = /^acquire (\d+)$/.exec(lines[0] ?? '');
  const acquireNumber = counted ? Number(counted[1]) : undefined;
  const [state, runId, since, ...who] = (lines.at(-1) ?? '').split(' ');
  if (res.code === 0 && state === 'acquired') return { acquireNumber };
  if (res.code === 0 && state === 'stale') return { tookOverStale: { runId, since: Number(since), who: who.join(' ') }, acquireNumber };
  if ((res.code === 3 && state === 'held') || (res.code === 5 && state === 'contended')) {
    const seen =
      state === 'held'
        ? `run ${runId} by ${who.join(' ')} holds ${dir} (its record was refreshed at ${new Date(Number(since) * 1000).toISOString()}, host clock)`
        : `another run took ${dir} at the same moment`;
    throw new CauseError('LOCK_HELD', {
      host: remote.host,
      evidence: { seen, command: `sudo cat ${dir}/owner   # the holder; a lock not refreshed for ${STALE_AFTER_S / 60} min is taken over` },
    });
  }
  throw new CauseError('APPLY_FAILED', {
    host: remote.host,
    evidence: { command: `acquire ${dir}`, exitCode: res.code, excerpt: (res.stderr || res.stdout).slice(-1000) },
  });
}

/**
 * A read-only probe of the host's lock, for the probes a run sends beside its acquire: `free <n>` or
 * `held <n> <run>`, n the number of acquires so far (read first) and run the holder's id (when this user may
 * read its record). Its answer, read before the probes after it in the same batch, vouches for them
 * (probesTrusted) once this run's acquire has said its own number.
 */
export function lockStateProbe(sudo: boolean, dir = LOCK_DIR): ProbeCommand {
  // No count file: no acquire since the host booted (/run is a tmpfs). One this user cannot read vouches for nothing.
  return {
    command: `f=${shq(`${dir}.acquire`)}; n=0; [ ! -e "$f" ] || n=$(wc -c < "$f") || n=unreadable; if [ -e ${shq(dir)} ]; then o=; read o _ < ${shq(`${dir}/owner`)} 2>/dev/null; echo "held $n $o"; else echo "free $n"; fi`,
    sudo,
  };
}

/**
 * Whether probes read after `state` (lockStateProbe's answer) show the host as this run (`runId`) found it once
 * it holds the lock, its acquire numbered `acquired`: either no run held the lock then and no acquire came
 * between (`free <acquired>`), or this run's acquire came first (`<acquired + 1>`: held by this run from then
 * on), or this run already held it (`held <any> <runId>`: the acquire counted and took it between the state's
 * two reads; whoever held it before had let go, and nobody else changes the host while this run holds it).
 * Anything else (a run held the lock while they read, or took it since) may have changed what they saw.
 */
export function probesTrusted(state: string | undefined, acquired: number | undefined, runId: string): boolean {
  const m = /^(free|held) (\S+)(?: (\S+))?\n?$/.exec(state ?? '');
  if (!m) return false;
  if (m[1] === 'held' && m[3] === runId) return true;
  // The count as a number; a count the probe could not read vouches for nothing.
  const n = /^\d+$/.test(m[2]) ? Number(m[2]) : undefined;
  if (acquired === undefined || n === undefined) return false;
  return (m[1] === 'free' && n === acquired) || n === acquired + 1;
}

/** Refreshes this run's owner record (host clock); false when the lock is no longer this run's. */
export async function refreshLock(remote: Remote, runId: string, opts: LockOptions = {}): Promise<boolean> {
  const script = `d=${shq(opts.dir ?? LOCK_DIR)}; me=${shq(runId)}
read oid obeat owho < "$d/owner" 2>/dev/null
[ "$oid" = "$me" ] || { echo lost; exit 3; }
printf '%s %s %s\\n' "$me" "$(date +%s)" "$owho" > "$d/owner.$me" && mv -f "$d/owner.$me" "$d/owner" && echo refreshed`;
  const res = await remote.exec(`sh -c ${shq(script)}`, { sudo: true, timeoutMs: 15_000 }).catch(() => undefined);
  // A refresh that could not run (a dropped connection) is not a lost lock: the next one tries again.
  return !(res?.code === 3 && res.stdout.trim() === 'lost');
}

/**
 * Releases the lock if this run holds it. Never throws: it runs on the way out, also after a stop. Resolves
 * false when the host did not answer at all (the connection was lost), so the caller may try a fresh one.
 */
export async function releaseLock(remote: Remote, runId: string, opts: LockOptions = {}): Promise<boolean> {
  // Renamed aside before it is removed, and put back when it turns out to be another run's (taken over
  // between the read and the rename): a release never removes a lock it does not hold. Exit 1: this user
  // could not (an owner record it cannot read, a rename or removal refused): sudo does it then. A removal cut
  // short leaves this run's own aside name, which the next attempt removes first.
  const script = `d=${shq(opts.dir ?? LOCK_DIR)}; me=${shq(runId)}; g="$d.release.$me"
[ ! -e "$g" ] || rm -rf "$g" 2>/dev/null || exit 1
[ -e "$d" ] || exit 0
[ -r "$d/owner" ] || exit 1
read oid rest < "$d/owner"; [ "$oid" = "$me" ] || exit 0
mv -T "$d" "$g" 2>/dev/null || exit 1
read gid rest < "$g/owner" 2>/dev/null
if [ "$gid" = "$me" ]; then rm -rf "$g" 2>/dev/null || exit 1; else mv -T "$g" "$d" 2>/dev/null; fi; true`;
  // As the SSH user first: the lock is its own (acquireScript chowns it), so no sudo is started for it, and
  // a run whose sudo was taken away meanwhile still releases; through sudo when the user could not.
  const mine = await remote.exec(`sh -c ${shq(script)}`, { timeoutMs: 15_000 }).catch(() => undefined);
  if (mine === undefined || mine.lost) return false;
  if (mine.code !== 0) await remote.exec(`sh -c ${shq(script)}`, { sudo: true, timeoutMs: 15_000 }).catch(() => undefined);
  return true;
}
