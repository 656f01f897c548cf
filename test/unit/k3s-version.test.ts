import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeVersionDeps, versionStops, type VersionDeps } from '../../phases/node-baseline/k3s-version.ts';
import { installTwin } from '../../lab/twin/build.ts';

const WANT = 'v1.33.5+k3s1';

/** An ELF header for `machine` (0x3e x86_64, 0xb7 aarch64), then `body`. */
function elf(machine: number, body: string): Buffer {
  const head = Buffer.alloc(64);
  head.writeUInt32BE(0x7f454c46, 0);
  head.writeUInt16LE(machine, 18);
  return Buffer.concat([head, Buffer.from(body, 'latin1')]);
}

function deps(file: Buffer, out: { stdout: string; code?: number }, platform = { os: 'linux', arch: 'x64' }) {
  const ran: string[][] = [];
  const d: VersionDeps = {
    head: async () => file.subarray(0, 20),
    read: async () => file,
    run: async (_p, args) => (ran.push(args), { code: out.code ?? 0, stdout: out.stdout, stderr: '' }),
    platform,
  };
  return { d, ran };
}

const seen = async (file: Buffer, out: { stdout: string; code?: number }, platform?: { os: string; arch: string }) => {
  const { d, ran } = deps(file, out, platform);
  const stops = await versionStops('/art/k3s', WANT, d);
  return { ran, stops: stops.map((s) => [s.causeId, s.evidence.seen]) };
};

describe('K3S_VERSION_MISMATCH', () => {
  it("runs a binary for the operator's own platform with --version and reads its first line", async () => {
    const ok = await seen(elf(0x3e, ''), { stdout: `k3s version ${WANT} (8e8f2a47)\ngo version go1.24.6\n` });
    expect(ok).toEqual({ ran: [['--version']], stops: [] });
    const other = await seen(elf(0x3e, ''), { stdout: 'k3s version v1.32.9+k3s1 (abcdef12)\ngo version go1.23.12\n' });
    expect(other.stops).toEqual([['K3S_VERSION_MISMATCH', `the k3s binary reports v1.32.9+k3s1, k3s.version is ${WANT}`]]);
    const garbage = await seen(elf(0x3e, ''), { stdout: '', code: 126 });
    expect(garbage.stops).toEqual([['K3S_VERSION_MISMATCH', `the k3s binary's --version printed no "k3s version v…" line, k3s.version is ${WANT}`]]);
  });

  it('reads the release linked into a binary it cannot run (another CPU, another OS)', async () => {
    const arm = await seen(elf(0xb7, `\0go1.24\0${WANT}\0`), { stdout: 'never run' });
    expect(arm).toEqual({ ran: [], stops: [] });
    const onMac = await seen(elf(0x3e, `\0${WANT}\0`), { stdout: 'never run' }, { os: 'darwin', arch: 'x64' });
    expect(onMac).toEqual({ ran: [], stops: [] });
    const older = await seen(elf(0xb7, '\0v1.32.9+k3s1\0'), { stdout: '' });
    expect(older.stops).toEqual([['K3S_VERSION_MISMATCH', `the k3s binary (for another platform, not run) carries v1.32.9+k3s1, not ${WANT} (k3s.version)`]]);
    // v1.33.5+k3s10 is not v1.33.5+k3s1
    const longer = await seen(elf(0xb7, '\0v1.33.5+k3s10\0'), { stdout: '' });
    expect(longer.stops).toEqual([['K3S_VERSION_MISMATCH', `the k3s binary (for another platform, not run) carries v1.33.5+k3s10, not ${WANT} (k3s.version)`]]);
  });

  it("runs the lab's twin (a script, it runs anywhere) and accepts it, and names another version it claims", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'k3s-version-'));
    try {
      const k3s = await installTwin(dir);
      expect(await versionStops(k3s, WANT, nodeVersionDeps)).toEqual([]);
      const stops = await versionStops(k3s, 'v1.34.1+k3s1', nodeVersionDeps);
      expect(stops.map((s) => [s.causeId, s.evidence.seen])).toEqual([
        ['K3S_VERSION_MISMATCH', 'the k3s binary reports v1.33.5+k3s1, k3s.version is v1.34.1+k3s1'],
      ]);
      writeFileSync(join(dir, 'not-k3s'), '#!/bin/sh\necho hello\n', { mode: 0o755 });
      expect((await versionStops(join(dir, 'not-k3s'), WANT, nodeVersionDeps)).map((s) => s.evidence.excerpt)).toEqual(['hello']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
