// One run at a time per host: a lock directory in /run on the host (mkdir is atomic; /run is emptied
// at boot, so a rebooted host holds no lock). A lock older than STALE_AFTER is taken over, so a run that
// died cannot block the environment for ever.
import { CauseError } from '../errors.ts';
import type { Remote } from '../transport/types.ts';
import { shq } from '../util/shell.ts';

export const LOCK_DIR = '/run/bootstrap.lock';
export const STALE_AFTER_S = 2 * 60 * 60;

export interface LockOwner {
  runId: string;
  since: number;
  who: string;
}

export async function acquireLock(remote: Remote, owner: LockOwner, opts: { staleAfterS?: number } = {}): Promise<{ tookOverStale?: LockOwner }> {
  const stale = opts.staleAfterS ?? STALE_AFTER_S;
  const line = `${owner.runId} ${owner.since} ${owner.who}`;
  const script = `
d=${LOCK_DIR}
if mkdir "$d" 2>/dev/null; then printf '%s\\n' ${shq(line)} > "$d/owner"; echo acquired; exit 0; fi
read oid ots owho < "$d/owner" 2>/dev/null
if [ "$oid" = ${shq(owner.runId)} ]; then echo acquired; exit 0; fi
now=$(date +%s)
if [ $((now - \${ots:-0})) -gt ${stale} ]; then printf '%s\\n' ${shq(line)} > "$d/owner"; echo "stale $oid $ots $owho"; exit 0; fi
echo "held $oid $ots $owho"; exit 3`;
  const res = await remote.exec(`sh -c ${shq(script)}`, { sudo: true, timeoutMs: 30_000 });
  const [state, runId, since, ...who] = res.stdout.trim().split(' ');
  if (res.code === 0 && state === 'acquired') return {};
  if (res.code === 0 && state === 'stale') return { tookOverStale: { runId, since: Number(since), who: who.join(' ') } };
  if (res.code === 3 && state === 'held') {
    throw new CauseError('LOCK_HELD', {
      host: remote.host,
      evidence: {
        seen: `run ${runId} by ${who.join(' ')} holds ${LOCK_DIR} since ${new Date(Number(since) * 1000).toISOString()}`,
        command: `sudo rm -rf ${LOCK_DIR}   # only if that run is dead`,
      },
    });
  }
  throw new CauseError('APPLY_FAILED', {
    host: remote.host,
    evidence: { command: `acquire ${LOCK_DIR}`, exitCode: res.code, excerpt: (res.stderr || res.stdout).slice(-1000) },
  });
}

/** Releases the lock if this run holds it. Never throws: it runs on the way out, also after a stop. */
export async function releaseLock(remote: Remote, runId: string): Promise<void> {
  const script = `read oid rest < ${LOCK_DIR}/owner 2>/dev/null; [ "$oid" = ${shq(runId)} ] && rm -rf ${LOCK_DIR}; true`;
  await remote.exec(`sh -c ${shq(script)}`, { sudo: true, timeoutMs: 15_000 }).catch(() => undefined);
}
