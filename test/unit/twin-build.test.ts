import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { K3S_VERSION as LAB_VERSION } from '../../lab/inventory.ts';
import { installTwin } from '../../lab/twin/build.ts';

describe('k3s twin executable', () => {
  it('installs as one executable script `k3s` that claims the lab inventory version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'twin-artifacts-'));
    const k3s = await installTwin(dir);
    expect(k3s).toBe(join(dir, 'k3s'));
    expect(statSync(k3s).mode & 0o111).toBe(0o111);
    expect(readFileSync(k3s, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(execFileSync(k3s, ['--version'], { encoding: 'utf8' })).toContain(`k3s version ${LAB_VERSION} `);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
