// Files the tool reads outside the inventory (~/.ssh/config and its Includes, identity and known_hosts files
// named only by ssh config, a backup's manifest, the state folder's journal and token): a FIFO in any of
// them is refused with its named cause at once, never a blocked read (src/util/regular-file.ts). A read
// that did block would hang the test process itself, so every FIFO gets a rescuer: a writer that opens it
// after 2 s (and is killed after the test), which turns a blocked read into a late one the timing check
// fails, instead of a hang.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { fileSha256, readBackupToken, resolveBackup } from '../../src/backup/store.ts';
import { Journal } from '../../src/engine/journal.ts';
import { CauseError } from '../../src/errors.ts';
import { readToken } from '../../src/k3s/token.ts';
import { readKnownHosts } from '../../src/transport/host-key.ts';
import { chooseAuth } from '../../src/transport/identity.ts';
import { loadSshConfig } from '../../src/transport/ssh-config.ts';
import { defaultTargetEnv, resolveSshTarget } from '../../src/transport/target.ts';
import { NotRegularFile, readRegularFile } from '../../src/util/regular-file.ts';
import { cli } from '../support/cli.ts';

let dir: string;
const rescuers: ChildProcess[] = [];

/** A FIFO with no writer, and its rescuer. */
function fifo(path: string): string {
  execFileSync('mkfifo', [path]);
  rescuers.push(spawn('sh', ['-c', 'sleep 2; exec 3>"$1"', 'sh', path], { stdio: 'ignore' }));
  return path;
}

/** The result of `fn`, and that it came within a second. */
async function quickly<T>(fn: () => T | Promise<T>): Promise<T> {
  const t0 = Date.now();
  const r = await fn();
  expect(Date.now() - t0).toBeLessThan(1000);
  return r;
}

function thrown(fn: () => unknown): CauseError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CauseError);
    return err as CauseError;
  }
  throw new Error('nothing was thrown');
}

const stops = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'blocking-reads-'));
  // No test reads the operator's own ~/.ssh/config.
  vi.stubEnv('BOOTSTRAP_SSH_CONFIG', join(dir, 'no-ssh-config'));
});
afterEach(() => {
  for (const r of rescuers.splice(0)) r.kill();
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

describe('readRegularFile', () => {
  it('refuses a FIFO, a device and a folder before reading a byte', async () => {
    await quickly(() => expect(() => readRegularFile(fifo(join(dir, 'f')))).toThrow(NotRegularFile));
    expect(() => readRegularFile('/dev/zero')).toThrow(/is a FIFO, socket or device, not a regular file/);
    expect(() => readRegularFile(dir)).toThrow(/is a folder, not a file/);
    writeFileSync(join(dir, 'file'), 'text');
    expect(readRegularFile(join(dir, 'file')).toString()).toBe('text');
  });
});

describe('the SSH client setup', () => {
  // The commands' modules loaded (and transpiled) before the clock starts: the second measured is the FIFO's, not the loader's.
  beforeAll(async () => {
    await Promise.all([import('../../cli/run-command.ts'), import('../../cli/backup-command.ts')]);
  }, 30_000);

  it('a FIFO at ~/.ssh/config stops a run with SSH_CONFIG_UNREADABLE (exit 1, a stopped object with --json)', { timeout: 10_000 }, async () => {
    vi.stubEnv('BOOTSTRAP_SSH_CONFIG', fifo(join(dir, 'config')));
    const r = await quickly(() => cli(['prod', '--check', '--json']));
    expect(r.code).toBe(1);
    expect(stops(r.stdout)).toEqual([{ type: 'stopped', error: expect.objectContaining({ cause: 'SSH_CONFIG_UNREADABLE', remedy: expect.any(String) }) }]);
    expect(stops(r.stdout)[0].error.message).toContain(`${join(dir, 'config')} is a FIFO, socket or device`);
    const plain = await quickly(() => cli(['backup', 'prod']));
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('SSH_CONFIG_UNREADABLE');
  });

  it('a FIFO an Include names is SSH_CONFIG_UNREADABLE; an Include naming nothing readable is still skipped', { timeout: 10_000 }, async () => {
    mkdirSync(join(dir, '.ssh', 'config.d'), { recursive: true });
    writeFileSync(join(dir, '.ssh', 'config'), 'Include config.d/*\nInclude missing\n');
    mkdirSync(join(dir, '.ssh', 'config.d', 'a-folder'));
    expect(loadSshConfig(join(dir, '.ssh', 'config'), dir).blocks).toHaveLength(1);
    fifo(join(dir, '.ssh', 'config.d', 'b-fifo'));
    const err = await quickly(() => thrown(() => loadSshConfig(join(dir, '.ssh', 'config'), dir)));
    expect(err.causeId).toBe('SSH_CONFIG_UNREADABLE');
    expect(err.message).toContain(`b-fifo is a FIFO, socket or device, not a regular file (named by an Include line of ${join(dir, '.ssh', 'config')})`);
  });

  it(
    'an IdentityFile and a UserKnownHostsFile named only by ssh config that are FIFOs are named causes before any connection',
    { timeout: 10_000 },
    async () => {
      const configFile = join(dir, 'config');
      writeFileSync(configFile, `Host k3s-prod-1\n  IdentityFile ${join(dir, 'id_fifo')}\n  UserKnownHostsFile ${join(dir, 'kh_fifo')}\n`);
      fifo(join(dir, 'id_fifo'));
      fifo(join(dir, 'kh_fifo'));
      const target = resolveSshTarget({ name: 'k3s-prod-1', address: '192.168.2.11' }, { ...defaultTargetEnv(loadSshConfig(configFile, dir)), home: dir });
      const identity = await quickly(() => thrown(() => chooseAuth(target, { home: dir })));
      expect(identity).toMatchObject({ causeId: 'SSH_IDENTITY_UNUSABLE', host: 'k3s-prod-1' });
      expect(identity.message).toContain('id_fifo is a FIFO, socket or device');
      const knownHosts = await quickly(() => thrown(() => readKnownHosts(target.knownHostsFile)));
      expect(knownHosts.causeId).toBe('SSH_CONFIG_UNREADABLE');
      expect(knownHosts.message).toContain('kh_fifo is a FIFO, socket or device');
    },
  );
});

describe("the state folder's files", () => {
  it('a FIFO backup manifest.json stops `backup --list` and `--restore` with STATE_FILE_CORRUPT naming it', { timeout: 10_000 }, async () => {
    const backup = join(dir, 'prod', 'backups', '2026-11-30T05-40-12Z');
    mkdirSync(backup, { recursive: true });
    fifo(join(backup, 'manifest.json'));
    const env = { BOOTSTRAP_STATE_DIR: dir };
    for (const argv of [
      ['backup', 'prod', '--list', '--json'],
      ['prod', '--restore', backup, '--json'],
    ]) {
      const r = await quickly(() => cli(argv, env));
      expect(r.code, argv.join(' ')).toBe(1);
      const [stop] = stops(r.stdout);
      expect(stop.error).toMatchObject({ cause: 'STATE_FILE_CORRUPT', remedy: expect.stringContaining('restore another one') });
      expect(stop.error.message).toContain(`${join(backup, 'manifest.json')} is a FIFO, socket or device`);
    }
    const plain = await quickly(() => cli(['backup', 'prod', '--list'], env));
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('STATE_FILE_CORRUPT');
  });

  it("a FIFO as a backup's token or snapshot, the journal or the cluster token is no blocked read", { timeout: 10_000 }, async () => {
    const backup = join(dir, 'b');
    mkdirSync(backup);
    const manifest = { id: 'b', k3sVersion: 'v1.33.5+k3s1', snapshotServer: 's', sha256: '', bytes: 0, objects: [] };
    writeFileSync(join(backup, 'manifest.json'), JSON.stringify(manifest));
    fifo(join(backup, 'cluster-token.json'));
    await quickly(() => expect(readBackupToken(resolveBackup(backup, dir))).toBeUndefined());
    expect(await quickly(() => fileSha256(fifo(join(backup, 'snapshot'))))).toBeUndefined();
    fifo(join(dir, 'journal.json'));
    expect((await quickly(() => thrown(() => Journal.read(join(dir, 'journal.json'))))).causeId).toBe('STATE_FILE_CORRUPT');
    fifo(join(dir, 'cluster-token.json'));
    const token = await quickly(() => thrown(() => readToken(dir)));
    expect(token.causeId).toBe('TOKEN_MALFORMED');
    expect(token.evidence.seen).toContain('is a FIFO, socket or device');
  });
});
