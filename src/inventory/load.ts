// Reading an inventory file: the one place with I/O before a run (besides the artifact check).
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { InventoryInvalid } from '../errors.ts';
import { deriveInventory } from './derive.ts';
import type { Derived, Inventory, InventoryWarning } from './types.ts';
import { stripYamlExtension, validateInventory } from './validate.ts';

export interface LoadedInventory {
  /** The absolute path of the file read. */
  file: string;
  inventory: Inventory;
  derived: Derived;
  warnings: InventoryWarning[];
}

export interface LoadOptions {
  /** For `~` in paths; defaults to the user's home. */
  home?: string;
  readText?: (file: string) => Promise<string>;
}

/** Load, validate and derive. Throws InventoryInvalid (exit 65) with every violation. */
export async function loadInventory(file: string, opts: LoadOptions = {}): Promise<LoadedInventory> {
  const path = resolve(file);
  const read = opts.readText ?? ((f: string) => readFile(f, 'utf8'));
  let text: string;
  try {
    text = await read(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'the file does not exist' : `the file cannot be read (${code ?? String(err)})`;
    throw new InventoryInvalid(file, [{ id: 'INVENTORY_SCHEMA', path: '', message: `${file}: ${why}` }]);
  }
  return fromText(text, path, opts.home ?? homedir());
}

/** The pure part of loadInventory, for callers that already hold the text. */
export function fromText(text: string, file: string, home: string): LoadedInventory {
  const result = validateInventory(text, stripYamlExtension(basename(file)));
  if (!result.ok || !result.inventory) throw new InventoryInvalid(file, result.violations);
  const derived = deriveInventory(result.inventory, { inventoryDir: dirname(resolve(file)), home });
  return { file: resolve(file), inventory: result.inventory, derived, warnings: result.warnings };
}
