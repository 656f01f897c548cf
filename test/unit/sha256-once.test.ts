// A run hashes the k3s binary and the image archives once per process while they are unchanged
// (src/util/sha256-file.ts sha256FileOnce); a file replaced in between is hashed again, a missing one rejects.
import { createReadStream, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { sha256FileOnce } from '../../src/util/sha256-file.ts';

// Every read of a file's bytes, counted.
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>();
  return { ...fs, createReadStream: vi.fn(fs.createReadStream) };
});

const sum = (s: string) => createHash('sha256').update(s).digest('hex');

describe('sha256FileOnce', () => {
  it('reads an unchanged file once, a replaced one again, and rejects a missing one', async () => {
    const opened = vi.mocked(createReadStream);
    const dir = mkdtempSync(join(tmpdir(), 'sha-once-'));
    const f = join(dir, 'k3s');
    writeFileSync(f, 'release one');
    expect(await Promise.all([sha256FileOnce(f), sha256FileOnce(f), sha256FileOnce(f)])).toEqual(Array(3).fill(sum('release one')));
    expect(opened).toHaveBeenCalledTimes(1);
    // Another release put in its place (a new inode), as the artifacts command does.
    writeFileSync(`${f}.new`, 'release two');
    renameSync(`${f}.new`, f);
    expect(await sha256FileOnce(f)).toBe(sum('release two'));
    expect(opened).toHaveBeenCalledTimes(2);
    await expect(sha256FileOnce(join(dir, 'absent'))).rejects.toThrow(/ENOENT/);
  });
});
