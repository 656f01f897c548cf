// Loading a file: the inventory with defaults, the derived values and the warnings, or
// InventoryInvalid (exit 65) carrying every violation.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InventoryInvalid } from '../../src/errors.ts';
import { loadInventory } from '../../src/inventory/index.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/inventory/${name}.yaml`, import.meta.url), 'utf8');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'inventory-load-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('loadInventory', () => {
  it("returns the inventory with defaults, the derived values (paths from the file's folder) and warnings", async () => {
    const file = join(dir, 'single-server.yaml');
    writeFileSync(file, fixture('single-server'));
    const loaded = await loadInventory(file, { home: '/home/op' });
    expect(loaded.file).toBe(file);
    expect(loaded.inventory.ssh.port).toBe(22);
    expect(loaded.derived.paths.k3sArtifacts).toBe(join(dir, '../artifacts/k3s'));
    expect(loaded.derived.paths.fluxDeployKeyFile).toBe('/home/op/.config/bootstrap/prod-deploy-key');
    expect(loaded.warnings.map((w) => w.path)).toEqual(['servers']);
  });

  it('throws InventoryInvalid (exit 65) with every violation', async () => {
    const file = join(dir, 'many-violations.yaml');
    writeFileSync(file, fixture('many-violations'));
    const err = await loadInventory(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InventoryInvalid);
    const invalid = err as InventoryInvalid;
    expect(invalid.exitCode).toBe(65);
    expect(invalid.file).toBe(file);
    expect(invalid.violations).toHaveLength(12);
  });

  it('compares environment with the file it was read from', async () => {
    const file = join(dir, 'staging.yaml');
    writeFileSync(file, fixture('valid'));
    const err = (await loadInventory(file).catch((e: unknown) => e)) as InventoryInvalid;
    expect(err.violations).toEqual([
      {
        id: 'ENVIRONMENT_MISMATCH',
        path: 'environment',
        message: 'environment is "valid" but the file is staging.yaml: they must say the same name (line 2)',
      },
    ]);
  });

  it('a missing file is InventoryInvalid naming the file, not an ENOENT stack', async () => {
    const file = join(dir, 'nope.yaml');
    const err = (await loadInventory(file).catch((e: unknown) => e)) as InventoryInvalid;
    expect(err).toBeInstanceOf(InventoryInvalid);
    expect(err.violations).toEqual([{ id: 'INVENTORY_SCHEMA', path: '', message: `${file}: the file does not exist` }]);
  });
});
