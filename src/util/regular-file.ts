// Reading a file on the operator's machine without ever blocking. A FIFO, socket or device where a file
// belongs would block the run forever (and Ctrl-C cannot interrupt a read stuck in the kernel), so every
// file the tool reads is opened with O_NONBLOCK (the open of a FIFO returns at once) and checked with fstat
// on the open descriptor — not on the path, which could be swapped between a check and the read — to be a
// regular file before a byte is read. Callers turn NotRegularFile into their own named cause.
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, type Stats } from 'node:fs';

/** What a path is: `other` is a FIFO, socket or device (reading one would block or never end). */
export type EntryKind = 'file' | 'dir' | 'other' | 'missing';

/** The one question a check that reads nothing asks (the artifact check); follows symlinks. */
export function entryKind(path: string): EntryKind {
  try {
    const st = statSync(path);
    return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}

/** The path is there but is not a regular file; nothing was read from it. */
export class NotRegularFile extends Error {
  constructor(
    readonly path: string,
    readonly kind: 'dir' | 'other',
  ) {
    super(`${path} ${kind === 'dir' ? 'is a folder, not a file' : 'is a FIFO, socket or device, not a regular file'}`);
    this.name = 'NotRegularFile';
  }
}

/**
 * The bytes of a regular file. Throws NotRegularFile for a folder, FIFO, socket or device (before a byte
 * is read), the file system's error (ENOENT, EACCES, …) otherwise; `check` sees the file's stat before
 * the read (a size limit) and may throw.
 */
export function readRegularFile(path: string, check?: (st: Stats) => void): Buffer {
  const fd = openRegularFile(path);
  try {
    check?.(fstatSync(fd));
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A descriptor of a regular file, for a stream (a snapshot too large to hold); throws as readRegularFile does. */
export function openRegularFile(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegularFile(path, st.isDirectory() ? 'dir' : 'other');
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** readRegularFile as UTF-8 text. */
export function readRegularText(path: string, check?: (st: Stats) => void): string {
  return readRegularFile(path, check).toString('utf8');
}

/** Why a read failed, in words after the path: `does not exist`, `is a FIFO, socket or device, …`, `cannot be read (EACCES)`. */
export function readProblem(err: unknown): string {
  if (err instanceof NotRegularFile) return err.message.slice(err.path.length + 1);
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? String(err)})`;
}
