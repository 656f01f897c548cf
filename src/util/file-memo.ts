// Facts derived from local files that cost real time to derive again (the sha256 of a 70 MB k3s binary or a
// 1 GB image archive, the binary's `--version`, the images a chart's values pull), remembered across runs in
// the state folder. Each fact is keyed by the files' identity: device, inode, size and modification and
// change times in nanoseconds. Any write to a file, or a file replaced by another, changes its ctime or inode,
// so a remembered fact is never used for content it was not derived from (the trust git's index puts in
// the same fields). Without a store (tests, tools outside a run) facts are remembered for the process only.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';

interface Store {
  file: string;
  /** What the file held when the run opened it. */
  loaded: Record<string, unknown>;
  /** The facts this run used or derived: the only ones written back, so facts about old files fall away. */
  used: Record<string, unknown>;
  changed: boolean;
}

let store: Store | undefined;
/** This process's facts (also when a store is open: a fact derived twice in one run is derived once). */
const pending = new Map<string, Promise<unknown>>();

/** The identity of a local file's content, as the key of what is derived from it (throws as statSync does). */
function fileIdentity(path: string): string {
  const s = statSync(path, { bigint: true });
  return `${path}\0${s.dev}\0${s.ino}\0${s.size}\0${s.mtimeNs}\0${s.ctimeNs}`;
}

/**
 * The key of a fact named `kind` derived from the file at `path` (its identity: fileIdentity, which throws as
 * statSync does) and, when given, from `data` too (Cilium's values: by the sha256 of their JSON).
 */
export function factKey(kind: string, path: string, data?: unknown): string {
  const key = `${kind}\0${fileIdentity(path)}`;
  return data === undefined ? key : `${key}\0${createHash('sha256').update(JSON.stringify(data)).digest('hex')}`;
}

/** Remember facts in `file` across runs (a run's state folder). A missing or unreadable file starts empty. */
export function openFileMemo(file: string): void {
  let loaded: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) loaded = parsed;
  } catch {
    // No memo yet, or a torn one: every fact is derived again, as on a first run.
  }
  store = { file, loaded, used: {}, changed: false };
  pending.clear();
}

/** Writes the facts this run used back (atomically, 0600) and closes the store. Best effort: a memo is a cache. */
export function closeFileMemo(): void {
  const s = store;
  store = undefined;
  pending.clear();
  if (!s) return;
  if (!s.changed && Object.keys(s.used).length === Object.keys(s.loaded).length) return;
  try {
    mkdirSync(dirname(s.file), { recursive: true, mode: 0o700 });
    writeFileAtomic(s.file, JSON.stringify(s.used));
  } catch {
    // A full disk or a read-only folder costs the next run the time to derive again, nothing else.
  }
}

/**
 * The fact named `key` (build it from fileIdentity of every file it derives from), derived by `derive` only
 * when neither this run nor an earlier one (the open store) has it. A failed derivation is not kept, nor a
 * value `keep` refuses (a command that timed out says nothing lasting about the file).
 */
export function remembered<T>(key: string, derive: () => Promise<T>, keep: (value: T) => boolean = () => true): Promise<T> {
  const s = store;
  if (s && key in s.loaded && !(key in s.used)) s.used[key] = s.loaded[key];
  if (s && key in s.used) return Promise.resolve(s.used[key] as T);
  let p = pending.get(key) as Promise<T> | undefined;
  if (!p) {
    p = derive();
    pending.set(key, p);
    p.then(
      (value) => {
        if (!keep(value)) pending.delete(key);
        if (!keep(value) || store !== s || !s) return;
        s.used[key] = value;
        s.changed = true;
      },
      () => pending.delete(key),
    );
  }
  return p;
}
