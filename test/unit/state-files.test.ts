// State on the operator's machine is written whole (atomic, flushed) and read defensively: a torn
// journal stops a --resume with STATE_FILE_CORRUPT naming the file, never a crash or a silent restart.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/engine/journal.ts';
import { writeFileAtomic } from '../../src/util/atomic-file.ts';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'state-files-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('state files', () => {
  it('an atomic write leaves the whole new content, mode 0600, and no temporary file', () => {
    const f = join(dir, 'cluster-token.json');
    writeFileSync(f, 'old', { mode: 0o644 });
    writeFileAtomic(f, '{"secret":"x"}');
    expect(readFileSync(f, 'utf8')).toBe('{"secret":"x"}');
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['cluster-token.json']);
  });

  it.each([
    ['torn', '{"runId":"r1","finished":false,"comp'],
    ['not a journal', '{"hello":"world"}'],
  ])('a %s journal stops --resume with STATE_FILE_CORRUPT naming the file', (_what, text) => {
    writeFileSync(join(dir, 'journal.json'), text);
    let err: any;
    try {
      new Journal(dir, 'r2', { resume: true, now: new Date() });
    } catch (e) {
      err = e;
    }
    expect(err?.causeId).toBe('STATE_FILE_CORRUPT');
    expect(err.evidence.seen).toContain(join(dir, 'journal.json'));
  });

  it('without --resume a torn journal is simply replaced', () => {
    writeFileSync(join(dir, 'journal.json'), '{"torn');
    const j = new Journal(dir, 'r3', { resume: false, now: new Date() });
    j.complete('node-baseline', 'h1', {});
    // Written once per phase, at its end (the engine's checkpoint), not per host.
    expect(readFileSync(join(dir, 'journal.json'), 'utf8')).toBe('{"torn');
    j.checkpoint();
    expect(JSON.parse(readFileSync(join(dir, 'journal.json'), 'utf8'))).toMatchObject({ runId: 'r3', completed: { 'node-baseline': { h1: {} } } });
  });
});
