// The command line of backups and restores: what parses, what is refused, and --list of a backup folder.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import { writeBackup } from '../../src/backup/store.ts';
import { lastBuiltPhase } from '../../modes/compose.ts';
import { cli } from '../support/cli.ts';

describe('bootstrap backup / --restore arguments', () => {
  it('parses backup <env> [--list] and <env> --restore BACKUP', () => {
    expect(parseCommand(['backup', 'prod'])).toEqual({ kind: 'backup', env: 'prod', inventory: undefined, list: false, json: false });
    expect(parseCommand(['backup', 'prod', '--list', '--json'])).toMatchObject({ kind: 'backup', list: true, json: true });
    expect(parseCommand(['prod', '--restore', '2026-11-30T05-40-12Z', '--check'])).toMatchObject({
      kind: 'run',
      env: 'prod',
      restore: '2026-11-30T05-40-12Z',
      check: true,
    });
    expect(parseCommand(['prod'])).not.toHaveProperty('restore');
    expect(parseCommand(['backup', 'prod', '--server', 'srv-2'])).toMatchObject({ kind: 'backup', server: 'srv-2' });
    expect(() => parseCommand(['prod', '--server', 'srv-2'])).toThrow(/--server belongs to bootstrap backup/);
  });

  it('refuses what cannot go together', () => {
    expect(() => parseCommand(['prod', '--restore', 'x', '--from', 'k3s-join'])).toThrow(/--restore runs from the first phase/);
    expect(() => parseCommand(['prod', '--restore', 'x', '--resume'])).toThrow(/--restore runs from the first phase/);
    expect(() => parseCommand(['prod', '--list'])).toThrow(/--list belongs to bootstrap backup/);
    expect(() => parseCommand(['verify', 'prod', '--restore', 'x'])).toThrow(/--restore belongs to a run/);
  });

  it('a restore ends at the last phase that is built', () => {
    const p = (id: string, pending?: string) => ({ id, title: id, needs: [], hosts: () => [], concurrency: 'serial' as const, steps: [], pending });
    expect(lastBuiltPhase([p('a'), p('verify'), p('flux', 'not implemented yet')])).toBe('verify');
    expect(lastBuiltPhase([p('a'), p('flux')])).toBe('flux');
  });
});

describe('bootstrap backup <env> --list', () => {
  it('lists the backups of the state folder, never the token', async () => {
    const state = mkdtempSync(join(tmpdir(), 'backup-list-'));
    const manifest = {
      id: '2026-11-30T05-40-12Z',
      env: 'prod',
      takenAt: '2026-11-30T05:40:12.000Z',
      k3sVersion: 'v1.31.4+k3s1',
      snapshotServer: 'srv-1',
      servers: ['srv-1'],
      snapshotName: 'n',
      sha256: 'ab'.repeat(32),
      bytes: 3 * 1024 * 1024,
      objects: ['ConfigMap/a/b'],
      counts: { ConfigMap: 1 },
    };
    writeBackup(join(state, 'prod'), manifest, Buffer.from('x'), { secret: 'never-shown-secret' });
    const r = await cli(['backup', 'prod', '--list'], { BOOTSTRAP_STATE_DIR: state });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2026-11-30T05-40-12Z  k3s v1.31.4+k3s1  on srv-1  3.0 MiB  1 objects  sha256 abababababab…');
    const json = await cli(['backup', 'prod', '--list', '--json'], { BOOTSTRAP_STATE_DIR: state });
    expect(JSON.parse(json.stdout)[0]).toMatchObject({ id: manifest.id, objects: 1 });
    expect(r.stdout + json.stdout).not.toContain('never-shown-secret');
  });

  it('--server must name a server of the inventory', async () => {
    const r = await cli(['backup', 'prod', '--server', 'nope'], { BOOTSTRAP_STATE_DIR: mkdtempSync(join(tmpdir(), 'backup-srv-')) });
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/--server nope: not a server of prod/);
  });

  it('a torn manifest.json is STATE_FILE_CORRUPT naming it, for --list and --restore, with and without --json', async () => {
    const state = mkdtempSync(join(tmpdir(), 'backup-torn-'));
    const manifest = { id: 'torn', env: 'prod', k3sVersion: 'v1.31.4+k3s1', snapshotServer: 'srv-1', sha256: 'ab'.repeat(32), bytes: 1, objects: [] };
    const dir = writeBackup(join(state, 'prod'), { ...manifest, takenAt: '', servers: [], snapshotName: 'n', counts: {} }, Buffer.from('x'), { secret: 's' });
    const file = join(dir, 'manifest.json');
    const whole = readFileSync(file, 'utf8');
    const env = { BOOTSTRAP_STATE_DIR: state };
    for (const [text, seen] of [
      [whole.slice(0, whole.length / 2), 'is not JSON'],
      ['[]', 'is JSON, but not a backup manifest'],
    ]) {
      writeFileSync(file, text);
      for (const argv of [
        ['backup', 'prod', '--list'],
        ['prod', '--restore', dir],
        ['prod', '--restore', 'torn', '--check'],
      ]) {
        const plain = await cli(argv, env);
        expect(plain.code, argv.join(' ')).toBe(1);
        expect(plain.stderr).toContain('STATE_FILE_CORRUPT');
        expect(plain.stderr).toContain(`${file} ${seen}`);
        expect(plain.stderr).not.toMatch(/internal error|\n\s+at /);
        const json = await cli([...argv, '--json'], env);
        expect(json.code).toBe(1);
        const stops = json.stdout.split('\n').map((l) => JSON.parse(l));
        expect(stops).toEqual([
          { type: 'stopped', error: expect.objectContaining({ cause: 'STATE_FILE_CORRUPT', remedy: expect.stringContaining('restore another one') }) },
        ]);
        expect(stops[0].error.evidence.seen).toContain(file);
      }
    }
  });

  it('a restore from a backup that does not exist stops with BACKUP_NOT_FOUND', async () => {
    const state = mkdtempSync(join(tmpdir(), 'backup-none-'));
    const r = await cli(['prod', '--restore', 'no-such-backup'], { BOOTSTRAP_STATE_DIR: state });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BACKUP_NOT_FOUND');
  });
});
