// kustomize's patches as they act on an environment's resources: strategic merge and JSON 6902, inline or
// from a file, with `target:` selectors (`patches:`, and the older `patchesStrategicMerge:` /
// `patchesJson6902:`). Behaviour checked against kustomize v5.5 where the two could differ.
import { parse } from 'yaml';
import { gitopsInvalid, inside, parseDocs, readRequired, type Built, type ReadFile, type Resource } from './gitops-files.ts';
import { PatchError, applyJsonPatch, type PatchOp } from './json-patch.ts';

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

async function patchText(
  read: ReadFile,
  p: { path?: string; patch?: string },
  dir: string,
  kfile: string,
  built: Built,
): Promise<{ text: string; source: string }> {
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

export async function patchesOf(read: ReadFile, k: Record<string, any>, dir: string, kfile: string, built: Built): Promise<Patch[]> {
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
function strategicMerge(base: unknown, patch: unknown): unknown {
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

export function applyPatch(resources: Resource[], patch: Patch): void {
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
    throw gitopsInvalid(
      patch.source,
      `the patch of ${patch.doc.kind}/${patch.doc.metadata?.name} matches ${matches.length} resources (kustomize needs exactly one)`,
    );
  }
  for (const r of matches) {
    const before = { ...(r.doc.data ?? {}) };
    if (patch.form === 'smp') {
      if (patch.doc.$patch === 'delete') {
        resources.splice(resources.indexOf(r), 1);
        continue;
      }
      // With a target, the patch's own name and kind are only a label: the target decides (as kustomize).
      const body = patch.target
        ? { ...patch.doc, metadata: { ...(patch.doc.metadata ?? {}), name: r.doc.metadata?.name, namespace: r.doc.metadata?.namespace } }
        : patch.doc;
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
