// Facts derived from local files are remembered across runs (src/util/file-memo.ts): a second run with the
// same files derives nothing again; a file rewritten in between is derived again; the store keeps only the
// facts the last run used.
import { mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeFileMemo, factKey, openFileMemo, remembered } from '../../src/util/file-memo.ts';

afterEach(() => closeFileMemo());

function counting(value: (n: number) => string) {
  let n = 0;
  return { derive: async () => value(++n), calls: () => n };
}

it('derives once across two runs while the file is unchanged, and again once it is rewritten', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'memo-'));
  const file = join(dir, 'k3s');
  const store = join(dir, 'state', 'derived-facts.json');
  writeFileSync(file, 'release one');
  const sum = counting((n) => `sum ${n}`);

  openFileMemo(store);
  expect(await remembered(factKey('sha256', file), sum.derive)).toBe('sum 1');
  expect(await remembered(factKey('sha256', file), sum.derive)).toBe('sum 1');
  closeFileMemo();
  expect(statSync(store).mode & 0o777).toBe(0o600);

  openFileMemo(store);
  expect(await remembered(factKey('sha256', file), sum.derive)).toBe('sum 1');
  expect(sum.calls()).toBe(1);
  closeFileMemo();

  // Rewritten with the same size and its old modification time put back: the change time still moves.
  const { atime, mtime } = statSync(file);
  await new Promise((r) => setTimeout(r, 20));
  writeFileSync(file, 'release two');
  utimesSync(file, atime, mtime);
  openFileMemo(store);
  expect(await remembered(factKey('sha256', file), sum.derive)).toBe('sum 2');
  closeFileMemo();
  // Only the fact this run used is kept: the old file's is gone.
  expect(Object.values(JSON.parse(readFileSync(store, 'utf8')))).toEqual(['sum 2']);
});

it('keeps neither a failed derivation nor a value it is told not to keep', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'memo-'));
  openFileMemo(join(dir, 'derived-facts.json'));
  await expect(remembered('k', async () => Promise.reject(new Error('EIO')))).rejects.toThrow('EIO');
  expect(await remembered('k', async () => 'read')).toBe('read');
  const timedOut = counting((n) => (n === 1 ? 'killed' : 'v1.33.5+k3s1'));
  expect(await remembered('v', timedOut.derive, (v) => v !== 'killed')).toBe('killed');
  expect(await remembered('v', timedOut.derive, (v) => v !== 'killed')).toBe('v1.33.5+k3s1');
  expect(await remembered('v', timedOut.derive, (v) => v !== 'killed')).toBe('v1.33.5+k3s1');
  expect(timedOut.calls()).toBe(2);
});

it('starts empty from a torn store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'memo-'));
  const store = join(dir, 'derived-facts.json');
  writeFileSync(store, '{"sha256');
  openFileMemo(store);
  expect(await remembered('k', async () => 'derived')).toBe('derived');
});
