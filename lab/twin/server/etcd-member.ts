// Starting this server's etcd member and watching its output. etcd's own log lines go to the journal
// unchanged (k3s logs the embedded etcd's zap JSON lines the same way), but for the start line, which names
// the release's etcd instead of Debian's (../etcd/start-line.ts); a fatal line is kept so that a failed join
// can be reported with k3s's wording.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { startEtcd, type EtcdChild, type EtcdOptions } from '../etcd/process.ts';
import { claimEtcdRelease } from '../etcd/start-line.ts';
import { RELEASE } from '../version.ts';

export interface Member {
  child: EtcdChild;
  lastError(): string;
  removed(): boolean;
}

/** The member name: node name plus 8 random hex digits, kept in db/etcd/name (k3s setName). */
export function memberName(nameFile: string, node: string, force = false): string {
  if (!force && existsSync(nameFile)) return readFileSync(nameFile, 'utf8').trim();
  const name = `${node}-${randomBytes(4).toString('hex')}`;
  mkdirSync(dirname(nameFile), { recursive: true, mode: 0o700 });
  writeFileSync(nameFile, name, { mode: 0o600 });
  return name;
}

export function runMember(o: EtcdOptions, write: (line: string) => void = (l) => process.stderr.write(l + '\n')): Member {
  let lastError = '';
  let removed = false;
  const child = startEtcd(o, (line) => {
    write(claimEtcdRelease(line, RELEASE));
    try {
      const j = JSON.parse(line);
      if (j.level === 'fatal' || j.level === 'panic' || j.level === 'error') lastError = j.error ?? j.msg ?? lastError;
      if (String(j.msg ?? '').includes('permanently removed') || String(j.error ?? '').includes('permanently removed')) removed = true;
    } catch {
      if (/permanently removed/.test(line)) removed = true;
    }
  });
  return { child, lastError: () => lastError, removed: () => removed };
}
