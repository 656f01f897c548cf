// Reading an inventory file: the one place with I/O before a run (besides the artifact check).
import { homedir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { InventoryInvalid } from '../errors.ts';
import { NotRegularFile, readProblem, readRegularText } from '../util/regular-file.ts';
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
  /** An even server count passes (`--allow-even`, `--remove`). */
  allowEven?: boolean;
}

/** Larger than any real inventory by far; refused before parsing, so a huge file cannot exhaust memory. */
export const MAX_INVENTORY_BYTES = 1024 * 1024;

/**
 * The inventory's text, or InventoryInvalid naming why it cannot be read. Read through readRegularFile:
 * a FIFO or a device is refused before a byte is read (it would otherwise block the run forever).
 */
export async function readInventoryText(file: string): Promise<string> {
  const refuse = (why: string) => new InventoryInvalid(file, [{ id: 'INVENTORY_SCHEMA', path: '', message: `${file}: ${why}` }]);
  let text: string;
  try {
    text = readRegularText(file, (st) => {
      if (st.size > MAX_INVENTORY_BYTES) throw refuse(`is ${st.size} bytes; an inventory is at most ${MAX_INVENTORY_BYTES} bytes (1 MiB)`);
    });
  } catch (err) {
    if (err instanceof InventoryInvalid) throw err;
    if (err instanceof NotRegularFile) {
      throw refuse(err.kind === 'dir' ? 'is a folder, not an inventory file' : 'is not a regular file (a FIFO, socket or device); give the path of the inventory file');
    }
    throw refuse(readProblem(err) === 'does not exist' ? 'the file does not exist' : `the file ${readProblem(err)}`);
  }
  if (text.includes('\0')) throw refuse('holds a NUL byte; an inventory is YAML text');
  return text;
}

/** Load, validate and derive. Throws InventoryInvalid (exit 65) with every violation. */
export async function loadInventory(file: string, opts: LoadOptions = {}): Promise<LoadedInventory> {
  const path = resolve(file);
  const text = await (opts.readText ?? readInventoryText)(path);
  return fromText(text, path, opts.home ?? homedir(), { allowEven: opts.allowEven });
}

/** The pure part of loadInventory, for callers that already hold the text. */
export function fromText(text: string, file: string, home: string, opts: { allowEven?: boolean } = {}): LoadedInventory {
  const result = validateInventory(text, stripYamlExtension(basename(file)), opts);
  if (!result.ok || !result.inventory) throw new InventoryInvalid(file, result.violations);
  const derived = deriveInventory(result.inventory, { inventoryDir: dirname(resolve(file)), home });
  return { file: resolve(file), inventory: result.inventory, derived, warnings: result.warnings };
}
