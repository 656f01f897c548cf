// The cluster token is checked for the form k3s accepts where the engine reads it (the state folder, a
// backup), before any host is dialled: a malformed one is TOKEN_MALFORMED, never sent to k3s.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { type BackupManifest, resolveBackup, writeBackup } from '../../src/backup/store.ts';
import { restorePrepare } from '../../phases/k3s/restore-prepare.ts';
import { prepareToken, readToken, tokenFormProblem } from '../../src/k3s/token.ts';

const hash = 'a'.repeat(64);

describe('cluster token form', () => {
  it('accepts a bare secret and a full K10 token', () => {
    expect(tokenFormProblem({ secret: 'f00d' })).toBeUndefined();
    expect(tokenFormProblem({ secret: 'f00d', full: `K10${hash}::server:f00d` })).toBeUndefined();
  });

  it("names what k3s would refuse, in k3s's words", () => {
    expect(tokenFormProblem({ secret: '' })).toBe('token must not be empty');
    expect(tokenFormProblem({ secret: 'f00d', full: 'K10abc::server:f00d' })).toBe('invalid token CA hash length');
    expect(tokenFormProblem({ secret: 'f00d', full: `K10${'A'.repeat(64)}::server:f00d` })).toBe('invalid token CA hash length');
    expect(tokenFormProblem({ secret: 'f00d', full: `K10${hash}::server:` })).toBe('invalid token format');
    expect(tokenFormProblem({ secret: 'f00d', full: `K10${hash}::f00d` })).toBe('invalid token format');
    expect(tokenFormProblem({ secret: 'f00d', full: `${hash}::server:f00d` })).toBe('invalid token format');
    expect(tokenFormProblem({ secret: 'K10xyz' })).toBe('invalid token format');
  });

  it('readToken refuses a malformed state-folder token as TOKEN_MALFORMED, without the secret in the evidence', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tok-'));
    writeFileSync(join(dir, 'cluster-token.json'), JSON.stringify({ secret: 'sup3rs3cret', full: 'K10deadbeef::server:sup3rs3cret' }));
    let err: unknown;
    try {
      readToken(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CauseError);
    expect((err as CauseError).causeId).toBe('TOKEN_MALFORMED');
    expect(JSON.stringify((err as CauseError).evidence)).toContain('invalid token CA hash length');
    expect(JSON.stringify((err as CauseError).evidence)).not.toContain('sup3rs3cret');
  });

  it("a phase's prepare stops on it once a run, before any host", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tok-'));
    writeFileSync(join(dir, 'cluster-token.json'), JSON.stringify({ secret: 's', full: 'K10::server:' }));
    const ctx = { stateDir: dir };
    const first = await prepareToken(ctx);
    expect(first.stops.map((s) => s.causeId)).toEqual(['TOKEN_MALFORMED']);
    expect((await prepareToken(ctx)).stops).toEqual([]);
    expect((await prepareToken({ stateDir: mkdtempSync(join(tmpdir(), 'tok-')) })).stops).toEqual([]);
  });

  it("a restore stops on a backup's malformed token", async () => {
    const state = mkdtempSync(join(tmpdir(), 'st-'));
    const manifest: BackupManifest = {
      id: 'b1',
      env: 'lab',
      takenAt: '2026-11-30T05:40:12.000Z',
      k3sVersion: 'v1.33.5+k3s1',
      snapshotServer: 'k3s-lab-1',
      servers: ['k3s-lab-1'],
      snapshotName: 'snap',
      sha256: 'x',
      bytes: 4,
      objects: [],
      counts: {},
    };
    writeBackup(state, manifest, Buffer.from('snap'), { secret: 's', full: 'K10abc::server:s' });
    const prepare = restorePrepare(resolveBackup('b1', state));
    const ctx = { stateDir: mkdtempSync(join(tmpdir(), 'env-')), redact: () => {}, inventory: { inventory: { k3s: { version: 'v1.33.5+k3s1' } } } };
    const { stops } = await prepare(ctx as never);
    expect(stops.map((s) => s.causeId)).toEqual(['TOKEN_MALFORMED']);
  });
});
