// The subset of `kustomize build` needed to know an environment's effective cluster-vars: follow
// `resources:` (files and folders, recursively), the `namespace:` transformer, and the patches — strategic
// merge and JSON 6902, inline or from a file, with `target:` selectors (`patches:`, and the older
// `patchesStrategicMerge:` / `patchesJson6902:`). Anything else that could change the ConfigMap
// (generators, components, remote bases) is refused, naming the file: fail closed rather than guess.
// Reading files is injected (paths are relative to the checkout, '/'-separated). As Flux builds (no load
// restrictions), a kustomization may name files outside its own folder, but not outside the checkout.
// Behaviour checked against kustomize v5.5 where the two could differ (patch order, namespaces, JSON 6902).
import { posix } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { CauseError } from '../../src/errors.ts';
import { PatchError, applyJsonPatch, type PatchOp } from './json-patch.ts';

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

const KUSTOMIZATION_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

async function readOrNull(read: ReadFile, path: string): Promise<string | null> {
  try {
    return await read(path);
  } catch {
    return null;
  }
}

async function readRequired(read: ReadFile, path: string, from: string): Promise<string> {
  const text = await readOrNull(read, path);
  if (text === null) throw gitopsInvalid(from, `${path} does not exist or cannot be read`);
  return text;
}

function parseDocs(text: string, file: string): Record<string, any>[] {
  const docs = parseAllDocuments(text);
  const out: Record<string, any>[] = [];
  for (const d of docs) {
    if (d.errors.length) throw gitopsInvalid(file, `not valid YAML: ${d.errors[0].message}`);
    const v = d.toJS();
    if (v && typeof v === 'object') out.push(v);
  }
  return out;
}

function inside(dir: string, rel: string, from: string): string {
  const p = posix.normalize(posix.join(dir, rel));
  if (p.startsWith('..') || posix.isAbsolute(p)) throw gitopsInvalid(from, `${rel} points outside the checkout`);
  return p;
}

function origins(doc: Record<string, any>, file: string): Record<string, string> {
  return doc.kind === 'ConfigMap' && doc.data && typeof doc.data === 'object' ? Object.fromEntries(Object.keys(doc.data).map((k) => [k, file])) : {};
}

/** Build the kustomization in `dir` (relative to the checkout). */
export async function kustomizeBuild(read: ReadFile, dir: string): Promise<Built> {
  const built: Built = { resources: [], files: [] };
  await buildInto(read, posix.normalize(dir), built, []);
  return built;
}

async function buildInto(read: ReadFile, dir: string, built: Built, stack: string[]): Promise<Resource[]> {
  if (stack.includes(dir)) throw gitopsInvalid(dir, `kustomizations include each other (${[...stack, dir].join(' → ')})`);
  let kfile = '';
  let text: string | null = null;
  for (const name of KUSTOMIZATION_NAMES) {
    kfile = posix.join(dir, name);
    text = await readOrNull(read, kfile);
    if (text !== null) break;
  }
  if (text === null) throw gitopsInvalid(dir, 'no kustomization.yaml in this folder');
  built.files.push(kfile);
  const k = parseDocs(text, kfile)[0] ?? {};
  for (const unsupported of ['components', 'configMapGenerator', 'secretGenerator', 'replacements', 'vars', 'namePrefix', 'nameSuffix']) {
    if (k[unsupported] !== undefined) {
      // NOTE: these could change what the ConfigMap holds or is called; bootstrap does not evaluate them.
      throw gitopsInvalid(kfile, `uses \`${unsupported}:\`, which bootstrap does not evaluate (it only follows resources, namespace and patches)`);
    }
  }
  const own: Resource[] = [];
  for (const entry of [...(k.resources ?? []), ...(k.bases ?? [])]) {
    if (typeof entry !== 'string') throw gitopsInvalid(kfile, `a resources entry is not a path: ${JSON.stringify(entry)}`);
    if (/^[a-z][a-z0-9+.-]*:\/\/|^git@|\?ref=/i.test(entry)) throw gitopsInvalid(kfile, `remote resource ${entry} is not supported`);
    const path = inside(dir, entry, kfile);
    if (/\.ya?ml$/i.test(path)) {
      const file = await readRequired(read, path, kfile);
      built.files.push(path);
      for (const doc of parseDocs(file, path)) own.push({ doc, file: path, origins: origins(doc, path) });
    } else {
      own.push(...(await buildInto(read, path, built, [...stack, dir])));
    }
  }
  const ids = new Map<string, string>();
  for (const r of own) {
    const id = `${r.doc.apiVersion}/${r.doc.kind}/${r.doc.metadata?.namespace ?? 'default'}/${r.doc.metadata?.name}`;
    const first = ids.get(id);
    if (first) throw gitopsInvalid(kfile, `${r.doc.kind}/${r.doc.metadata?.name} comes twice (${first} and ${r.file}); kustomize refuses a resource it already has`);
    ids.set(id, r.file);
  }
  // Patches first, then the namespace transformer: a patch names the resource as its files do (kustomize).
  for (const p of await patchesOf(read, k, dir, kfile, built)) applyPatch(own, p);
  if (typeof k.namespace === 'string') for (const r of own) r.doc.metadata = { ...(r.doc.metadata ?? {}), namespace: k.namespace };
  built.resources = own;
  return own;
}

interface Target {
  group?: string;
  version?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  labelSelector?: string;
  annotationSelector?: string;
}

type Patch = { form: 'smp'; doc: Record<string, any>; target?: Target; source: string } | { form: 'json6902'; ops: PatchOp[]; target: Target; source: string };

async function patchText(read: ReadFile, p: { path?: string; patch?: string }, dir: string, kfile: string, built: Built): Promise<{ text: string; source: string }> {
  if (typeof p.patch === 'string') return { text: p.patch, source: `${kfile} (inline patch)` };
  if (typeof p.path === 'string') {
    const path = inside(dir, p.path, kfile);
    const text = await readRequired(read, path, kfile);
    built.files.push(path);
    return { text, source: path };
  }
  throw gitopsInvalid(kfile, `a patch has neither path: nor patch: (${JSON.stringify(p)})`);
}

function toPatch(text: string, source: string, target: Target | undefined, kfile: string): Patch {
  let parsed: unknown;
  // NOTE: kustomize reads a patch starting with `[` as JSON only (observed with v5.5), not as flow YAML.
  const json = text.trimStart().startsWith('[');
  try {
    parsed = json ? JSON.parse(text) : parse(text);
  } catch (err) {
    throw gitopsInvalid(source, `the patch is not valid ${json ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  if (Array.isArray(parsed)) {
    if (!target) throw gitopsInvalid(kfile, `the JSON 6902 patch ${source} has no target:`);
    return { form: 'json6902', ops: parsed as PatchOp[], target, source };
  }
  if (!parsed || typeof parsed !== 'object') throw gitopsInvalid(source, 'the patch is neither a resource nor a list of operations');
  return { form: 'smp', doc: parsed as Record<string, any>, target, source };
}

async function patchesOf(read: ReadFile, k: Record<string, any>, dir: string, kfile: string, built: Built): Promise<Patch[]> {
  const out: Patch[] = [];
  for (const p of k.patchesStrategicMerge ?? []) {
    // Each entry is a file path, or an inline patch (YAML text).
    const inline = typeof p === 'string' && /\n|:\s/.test(p);
    const { text, source } = inline ? { text: p as string, source: `${kfile} (inline patch)` } : await patchText(read, { path: p }, dir, kfile, built);
    for (const doc of parseDocs(text, source)) out.push({ form: 'smp', doc, source });
  }
  for (const p of k.patchesJson6902 ?? []) {
    const { text, source } = await patchText(read, p, dir, kfile, built);
    out.push(toPatch(text, source, p.target ?? {}, kfile));
  }
  for (const p of k.patches ?? []) {
    const { text, source } = await patchText(read, p, dir, kfile, built);
    out.push(toPatch(text, source, p.target, kfile));
  }
  return out;
}

const anchored = (pattern: string, value: string | undefined) => new RegExp(`^(?:${pattern})$`).test(value ?? '');

function selectorMatches(selector: string | undefined, map: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=').map((s) => s.trim());
    return v === undefined ? Object.hasOwn(map ?? {}, k) : (map ?? {})[k] === v;
  });
}

function targetMatches(t: Target, doc: Record<string, any>): boolean {
  const [group, version] = String(doc.apiVersion ?? '').includes('/') ? String(doc.apiVersion).split('/') : ['', String(doc.apiVersion ?? '')];
  return (
    (t.kind === undefined || anchored(t.kind, doc.kind)) &&
    (t.name === undefined || anchored(t.name, doc.metadata?.name)) &&
    (t.namespace === undefined || anchored(t.namespace, doc.metadata?.namespace)) &&
    (t.group === undefined || t.group === group) &&
    (t.version === undefined || t.version === version) &&
    selectorMatches(t.labelSelector, doc.metadata?.labels) &&
    selectorMatches(t.annotationSelector, doc.metadata?.annotations)
  );
}

/** Strategic merge as it acts on ConfigMaps and plain maps: maps merge, null deletes, lists are replaced. */
export function strategicMerge(base: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const p = patch as Record<string, unknown>;
  if (p.$patch === 'replace') {
    const { $patch: _, ...rest } = p;
    return structuredClone(rest);
  }
  const out: Record<string, unknown> = base && typeof base === 'object' && !Array.isArray(base) ? structuredClone(base as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(p)) {
    if (k === '$patch') continue;
    if (v === null) delete out[k];
    else out[k] = strategicMerge(out[k], v);
  }
  return out;
}

function applyPatch(resources: Resource[], patch: Patch): void {
  const matches =
    patch.target !== undefined
      ? resources.filter((r) => targetMatches(patch.target!, r.doc))
      : resources.filter(
          (r) =>
            patch.form === 'smp' &&
            r.doc.kind === patch.doc.kind &&
            r.doc.metadata?.name === patch.doc.metadata?.name &&
            // No namespace means `default`, on both sides: a patch without one misses a flux-system ConfigMap.
            (patch.doc.metadata?.namespace ?? 'default') === (r.doc.metadata?.namespace ?? 'default'),
        );
  if (patch.target === undefined && matches.length !== 1 && patch.form === 'smp') {
    throw gitopsInvalid(patch.source, `the patch of ${patch.doc.kind}/${patch.doc.metadata?.name} matches ${matches.length} resources (kustomize needs exactly one)`);
  }
  for (const r of matches) {
    const before = { ...(r.doc.data ?? {}) };
    if (patch.form === 'smp') {
      if (patch.doc.$patch === 'delete') {
        resources.splice(resources.indexOf(r), 1);
        continue;
      }
      // With a target, the patch's own name and kind are only a label: the target decides (as kustomize).
      const body = patch.target ? { ...patch.doc, metadata: { ...(patch.doc.metadata ?? {}), name: r.doc.metadata?.name, namespace: r.doc.metadata?.namespace } } : patch.doc;
      r.doc = strategicMerge(r.doc, body) as Record<string, any>;
    } else {
      try {
        r.doc = applyJsonPatch(r.doc, patch.ops) as Record<string, any>;
      } catch (err) {
        if (!(err instanceof PatchError)) throw err;
        throw gitopsInvalid(patch.source, `the JSON 6902 patch does not apply to ${r.doc.kind}/${r.doc.metadata?.name}: ${err.message}`);
      }
    }
    const after = r.doc.data ?? {};
    for (const key of Object.keys(after)) if (!Object.hasOwn(before, key) || before[key] !== after[key]) r.origins[key] = patch.source;
    for (const key of Object.keys(r.origins)) if (!Object.hasOwn(after, key)) delete r.origins[key];
  }
}
