// `validate --json` and `plan --json` print one JSON object for every verdict: an inventory refused while
// it is read or loaded (InventoryInvalid) becomes validate's `{"ok":false,"causes":[…]}`, exit 65.
import { InventoryInvalid } from '../src/errors.ts';
import { toValidateJson } from '../src/inventory/validate.ts';
import type { Io } from './io.ts';

/** Runs `read`; with --json a refusal is printed as validate's object and its exit code returned. */
export async function orJsonRefusal<T>(json: boolean, io: Io, read: () => Promise<T>): Promise<{ value: T } | { exit: number }> {
  try {
    return { value: await read() };
  } catch (err) {
    if (!json || !(err instanceof InventoryInvalid)) throw err;
    io.out(JSON.stringify(toValidateJson({ ok: false, violations: err.violations })));
    return { exit: err.exitCode };
  }
}
