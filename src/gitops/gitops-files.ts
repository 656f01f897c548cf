// What reading a GitOps checkout shares: how files are read (injected), what a resource is, and the
// cause every unreadable or inapplicable file becomes.
import { posix } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CauseError } from '../errors.ts';

export type ReadFile = (path: string) => Promise<string>;

export interface Resource {
  doc: Record<string, any>;
  /** The file it came from. */
  file: string;
  /** For ConfigMaps: the file that last set each data key (base file or patch). */
  origins: Record<string, string>;
}

export interface Built {
  resources: Resource[];
  /** Every file read, in order. */
  files: string[];
}

export function gitopsInvalid(file: string, seen: string, excerpt?: string): CauseError {
  return new CauseError('GITOPS_SOURCE_INVALID', { message: `${file}: ${seen}`, evidence: { seen: `${file}: ${seen}`, excerpt } });
}

export async function readOrNull(read: ReadFile, path: string): Promise<string | null> {
  try {
    return await read(path);
  } catch {
    return null;
  }
}

export async function readRequired(read: ReadFile, path: string, from: string): Promise<string> {
  const text = await readOrNull(read, path);
  if (text === null) throw gitopsInvalid(from, `${path} does not exist or cannot be read`);
  return text;
}

export function parseDocs(text: string, file: string): Record<string, any>[] {
  const docs = parseAllDocuments(text);
  const out: Record<string, any>[] = [];
  for (const d of docs) {
    if (d.errors.length) throw gitopsInvalid(file, `not valid YAML: ${d.errors[0].message}`);
    const v = d.toJS();
    if (v && typeof v === 'object') out.push(v);
  }
  return out;
}

export function inside(dir: string, rel: string, from: string): string {
  const p = posix.normalize(posix.join(dir, rel));
  if (p.startsWith('..') || posix.isAbsolute(p)) throw gitopsInvalid(from, `${rel} points outside the checkout`);
  return p;
}
