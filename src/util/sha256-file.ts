// The sha256 of a local file, streamed (a 70 MB binary or a 1 GB image archive is never held in memory).
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

/** Sums already taken in this process, by the file's identity and state (see sha256FileOnce). */
const taken = new Map<string, Promise<string>>();

/**
 * sha256File, once per file per process while the file is unchanged: a run's steps ask for the same k3s binary
 * and image archives on every host and in several phases (the rolling preflight, the rolling step, the install
 * steps; 27 agents ask 27 times), and hashing 70 MB or a 1 GB archive again each time was most of a converged
 * run's CPU on the operator's machine. The key is the file's device, inode, size and change times in
 * nanoseconds, so a file replaced or rewritten in between is hashed again. A failed read is not kept, and a
 * missing file is a rejection, as with sha256File.
 */
export async function sha256FileOnce(path: string): Promise<string> {
  const s = statSync(path, { bigint: true });
  const key = `${path}\0${s.dev}\0${s.ino}\0${s.size}\0${s.mtimeNs}\0${s.ctimeNs}`;
  let sum = taken.get(key);
  if (!sum) {
    sum = sha256File(path);
    taken.set(key, sum);
    sum.catch(() => taken.delete(key));
  }
  return sum;
}
