// The sha256 of a local file, streamed (a 70 MB binary or a 1 GB image archive is never held in memory).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { factKey, remembered } from './file-memo.ts';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * sha256File, once per file while the file is unchanged, across runs (src/util/file-memo.ts): a run's steps ask
 * for the same k3s binary and image archives on every host and in several phases (the rolling preflight, the
 * rolling step, the install steps; 27 agents ask 27 times), and hashing 70 MB or a 1 GB archive again each
 * time was most of a converged run's CPU on the operator's machine. A file replaced or rewritten in between
 * is hashed again. A failed read is not kept, and a missing file is a rejection, as with sha256File.
 */
export async function sha256FileOnce(path: string): Promise<string> {
  return remembered(factKey('sha256', path), () => sha256File(path));
}
