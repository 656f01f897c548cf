// The subset of `kustomize build` needed to know an environment's effective cluster-vars: follow
// `resources:` (files and folders, recursively), the `namespace:` transformer, and the patches — strategic
// merge and JSON 6902, inline or from a file, with `target:` selectors (`patches:`, and the older
// `patchesStrategicMerge:` / `patchesJson6902:`). Anything else that could change the ConfigMap
// (generators, components, remote bases) is refused, naming the file: fail closed rather than guess.
// Reading files is injected (paths are relative to the checkout, '/'-separated). As Flux builds (no load
// restrictions), a kustomization may name files outside its own folder, but not outside the checkout.
// Behaviour checked against kustomize v5.5 where the two could differ (patch order, namespaces, JSON 6902).
import { posix } from 'node:path';
import { gitopsInvalid, inside, parseDocs, readOrNull, readRequired, type Built, type ReadFile, type Resource } from './gitops-files.ts';
import { applyPatch, patchesOf } from './kustomize-patches.ts';

export { gitopsInvalid, type Built, type ReadFile, type Resource } from './gitops-files.ts';

const KUSTOMIZATION_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

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
    if (first)
      throw gitopsInvalid(kfile, `${r.doc.kind}/${r.doc.metadata?.name} comes twice (${first} and ${r.file}); kustomize refuses a resource it already has`);
    ids.set(id, r.file);
  }
  // Patches first, then the namespace transformer: a patch names the resource as its files do (kustomize).
  for (const p of await patchesOf(read, k, dir, kfile, built)) applyPatch(own, p);
  if (typeof k.namespace === 'string') for (const r of own) r.doc.metadata = { ...(r.doc.metadata ?? {}), namespace: k.namespace };
  built.resources = own;
  return own;
}
