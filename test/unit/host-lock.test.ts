// The host lock, with its real scripts in a real shell on real files (a folder under the temp dir stands
// in for /run): exclusive under races, stale only by the host's clock, refreshed, released only by its owner.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, lockStateProbe, probesTrusted, refreshLock, releaseLock } from '../../src/engine/lock.ts';
import type { Remote } from '../../src/transport/types.ts';
import { LocalRemote } from '../support/local-remote.ts';

let root: string;
let dir: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'host-lock-'));
  dir = join(root, 'bootstrap.lock');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const host = new LocalRemote('node-1');
type Outcome = { runId: string; held: boolean; took?: string; cause?: string };
const take = (runId: string, staleAfterS?: number): Promise<Outcome> =>
  acquireLock(host, { runId, who: `op-${runId}@here` }, { dir, staleAfterS }).then(
    (r) => ({ runId, held: true, took: r.tookOverStale?.runId }),
    (e) => ({ runId, held: false, cause: e.causeId as string }),
  );
const hostNow = () => Math.floor(Date.now() / 1000);
const writeOwner = (runId: string, beat: number) => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'owner'), `${runId} ${beat} someone@elsewhere\n`);
};
const owner = () => readFileSync(join(dir, 'owner'), 'utf8').split(' ')[0];

describe('host lock', () => {
  it('50 pairs of runs racing for a free lock: exactly one holds it each time', async () => {
    for (let i = 0; i < 50; i++) {
      rmSync(dir, { recursive: true, force: true });
      const results = await Promise.all([take(`a${i}`), take(`b${i}`)]);
      expect(results.filter((r) => r.held)).toHaveLength(1);
      expect(results.find((r) => !r.held)?.cause).toBe('LOCK_HELD');
      expect(owner()).toBe(results.find((r) => r.held)!.runId);
    }
  }, 180_000);

  it('50 pairs of runs racing to take over one stale lock: exactly one holds it each time', async () => {
    for (let i = 0; i < 50; i++) {
      rmSync(dir, { recursive: true, force: true });
      writeOwner('dead-run', hostNow() - 3600);
      const results = await Promise.all([take(`a${i}`, 600), take(`b${i}`, 600)]);
      const holders = results.filter((r) => r.held);
      expect(holders).toHaveLength(1);
      // The holder reports the take-over unless the other run moved the stale lock aside first.
      expect([undefined, 'dead-run']).toContain(holders[0].took);
      expect(owner()).toBe(holders[0].runId);
    }
  }, 180_000);

  // Three takers on one stale lock: the case where a taker that read the stale record moves a lock another
  // taker has just put in its place, and a third takes the emptied place meanwhile. Every acquire runs under
  // one flock on the host, so this interleaving cannot happen: exactly one holds it, and it is the lock in place.
  it('30 triples of runs racing to take over one stale lock: exactly one holds it each time', async () => {
    for (let i = 0; i < 30; i++) {
      rmSync(dir, { recursive: true, force: true });
      writeOwner('dead-run', hostNow() - 3600);
      const results = await Promise.all([take(`a${i}`, 600), take(`b${i}`, 600), take(`c${i}`, 600)]);
      const holders = results.filter((r) => r.held);
      expect(holders.map((r) => r.runId)).toHaveLength(1);
      expect(results.filter((r) => !r.held).map((r) => r.cause)).toEqual(['LOCK_HELD', 'LOCK_HELD']);
      expect(owner()).toBe(holders[0].runId);
    }
  }, 180_000);

  it('a lock is stale by the age of its refreshed record on the host clock, whatever the operator clock says', async () => {
    writeOwner('other', hostNow() - 30);
    expect(await take('mine', 600)).toMatchObject({ held: false, cause: 'LOCK_HELD' });
    writeOwner('other', hostNow() - 601);
    expect(await take('mine', 600)).toMatchObject({ held: true, took: 'other' });
  });

  it('the holder refreshes its record; a refresh by a run that lost the lock says so', async () => {
    await take('mine');
    writeFileSync(join(dir, 'owner'), `mine ${hostNow() - 500} op@here\n`);
    expect(await refreshLock(host, 'mine', { dir })).toBe(true);
    const beat = Number(readFileSync(join(dir, 'owner'), 'utf8').split(' ')[1]);
    expect(hostNow() - beat).toBeLessThan(5);
    expect(await refreshLock(host, 'someone-else', { dir })).toBe(false);
  });

  it('release removes only a lock this run holds', async () => {
    writeOwner('other', hostNow());
    await releaseLock(host, 'mine', { dir });
    expect(owner()).toBe('other');
    rmSync(dir, { recursive: true, force: true });
    await take('mine');
    await releaseLock(host, 'mine', { dir });
    expect(() => readFileSync(join(dir, 'owner'))).toThrow();
  });

  it('a lock folder left empty (an owner never written) is taken at once', async () => {
    mkdirSync(dir);
    utimesSync(dir, new Date(), new Date());
    expect(await take('mine')).toMatchObject({ held: true });
    expect(owner()).toBe('mine');
  });
});

describe("the lock is the run's sudo check", () => {
  // The lock is the first command a run sends through sudo (no `sudo -n true` of its own before it): sudo's
  // own refusals stop the run with the causes the connection check named.
  const sudoAnswers = (stderr: string, code: number): Remote =>
    ({ host: 'node-2', exec: async (command: string) => ({ command, stdout: '', stderr, code, durationMs: 3 }) }) as unknown as Remote;

  it("sudo asking for a password: SUDO_NEEDS_PASSWORD on that host, with sudo's words", async () => {
    const err = await acquireLock(sudoAnswers('sudo: a password is required\n', 1), { runId: 'r1', who: 'op@here' }, { dir }).catch((e: unknown) => e);
    expect(err).toMatchObject({ causeId: 'SUDO_NEEDS_PASSWORD', host: 'node-2', evidence: { exitCode: 1, excerpt: 'sudo: a password is required' } });
  });

  it("no sudo on the host: TOOL_MISSING naming the package; any other failure stays the lock's own", async () => {
    const missing = await acquireLock(sudoAnswers('sh: 1: sudo: not found\n', 127), { runId: 'r1', who: 'op@here' }, { dir }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ causeId: 'TOOL_MISSING', host: 'node-2', message: 'sudo is not installed on node-2 (Debian package sudo)' });
    const other = await acquireLock(sudoAnswers('mkdir: cannot create directory: Read-only file system\n', 4), { runId: 'r1', who: 'op@here' }, { dir }).catch(
      (e: unknown) => e,
    );
    expect(other).toMatchObject({ causeId: 'APPLY_FAILED', host: 'node-2' });
  });

  describe("probes sent beside a run's acquire", () => {
    const state = async () => (await host.exec(lockStateProbe(false, dir).command)).stdout;
    const acquired = async (runId: string) => (await acquireLock(host, { runId, who: 'op@here' }, { dir })).acquireNumber;

    it('every acquire is numbered, a refused one too; the state probe reads the count and whether a run holds the lock', async () => {
      expect(await state()).toBe('free 0\n');
      expect(await acquired('r1')).toBe(0);
      expect(await state()).toBe('held 1 r1\n');
      expect(await take('r2')).toMatchObject({ held: false, cause: 'LOCK_HELD' });
      expect(await state()).toBe('held 2 r1\n');
      await releaseLock(host, 'r1', { dir });
      expect(await state()).toBe('free 2\n');
      expect(await acquired('r3')).toBe(2);
    });

    it('are trusted when read before the acquire with no lock held and no acquire between, or after it', async () => {
      const before = await state();
      const n = await acquired('r1');
      const after = await state();
      expect([before, after]).toEqual(['free 0\n', 'held 1 r1\n']);
      expect([probesTrusted(before, n, 'r1'), probesTrusted(after, n, 'r1')]).toEqual([true, true]);
    });

    it("are trusted when the state's count came before this run's acquire and its look at the lock after it (held by this run)", async () => {
      // The state reads the count, then whether a run holds the lock: this run's acquire between the two.
      const command = lockStateProbe(false, dir).command.replace(
        '; if [ -e',
        '; touch ' + dir + '.counted; while [ ! -e ' + dir + '.taken ]; do sleep 0.01; done; if [ -e',
      );
      const racing = host.exec(command);
      while (!existsSync(`${dir}.counted`)) await new Promise((r) => setTimeout(r, 10));
      const n = await acquired('r1');
      writeFileSync(`${dir}.taken`, '');
      const seen = (await racing).stdout;
      expect(seen).toBe('held 0 r1\n');
      expect(probesTrusted(seen, n, 'r1')).toBe(true);
      expect(probesTrusted(seen, n, 'r2')).toBe(false);
    });

    it('are not trusted when another run held the lock while they read, or took it between them and the acquire', async () => {
      expect(await acquired('other')).toBe(0);
      const whileHeld = await state();
      await releaseLock(host, 'other', { dir });
      expect(probesTrusted(whileHeld, await acquired('r1'), 'r1')).toBe(false);
      await releaseLock(host, 'r1', { dir });

      const read = await state();
      expect(await acquired('other-2')).toBe(2);
      await releaseLock(host, 'other-2', { dir });
      expect(probesTrusted(read, await acquired('r2'), 'r2')).toBe(false);
    });

    it('vouch for nothing when the count cannot be read or the acquire gave no number', () => {
      expect(probesTrusted('free unreadable\n', 0, 'r1')).toBe(false);
      expect(probesTrusted('held unreadable\n', 0, 'r1')).toBe(false);
      expect(probesTrusted('free 0\n', undefined, 'r1')).toBe(false);
      expect(probesTrusted(undefined, 0, 'r1')).toBe(false);
    });
  });
});
