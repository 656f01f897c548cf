// The lab gives the machine the per-user kernel limits its hosts would have between them (lab/kernel-limits.ts):
// raised to 128 inotify instances per host booted, never lowered.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureKernelLimits } from '../../lab/kernel-limits.ts';

function procSys(instances: number, watches: number): string {
  const root = mkdtempSync(join(tmpdir(), 'proc-sys-'));
  mkdirSync(join(root, 'fs/inotify'), { recursive: true });
  writeFileSync(join(root, 'fs/inotify/max_user_instances'), `${instances}\n`);
  writeFileSync(join(root, 'fs/inotify/max_user_watches'), `${watches}\n`);
  return root;
}

const read = (root: string, key: string) => Number(readFileSync(join(root, 'fs/inotify', key), 'utf8'));

describe("the lab machine's per-user kernel limits", () => {
  it('30 hosts get 128 inotify instances each, where the default 128 is used up by about twenty', () => {
    const root = procSys(128, 8192);
    ensureKernelLimits(30, root);
    expect(read(root, 'max_user_instances')).toBe(3840);
    expect(read(root, 'max_user_watches')).toBe(245_760);
  });

  it('a limit already higher stays as it is', () => {
    const root = procSys(10_000, 1_000_000);
    ensureKernelLimits(4, root);
    expect(read(root, 'max_user_instances')).toBe(10_000);
    expect(read(root, 'max_user_watches')).toBe(1_000_000);
  });
});
