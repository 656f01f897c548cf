// Patch types the API server accepts (k8s docs "Update API Objects in Place Using kubectl patch",
// "Server-Side Apply"): JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
// (lists of objects merged by their `name`, `$patch: delete|replace` directives) and apply patches.
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

export function mergePatch(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch);
  const out: Record<string, any> = isObj(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** The key a strategic merge uses to pair list items (name for most Kubernetes lists). */
function mergeKeyOf(items: any[]): string | undefined {
  for (const key of ['name', 'containerPort', 'mountPath', 'devicePath', 'ip', 'type', 'topologyKey']) {
    if (items.length > 0 && items.every((x) => isObj(x) && x[key] !== undefined)) return key;
  }
  return undefined;
}

export function strategicMerge(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _r, ...rest } = patch;
    return clone(rest);
  }
  const out: Record<string, any> = isObj(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    if (v === null) delete out[k];
    else if (Array.isArray(v) && Array.isArray(out[k])) out[k] = mergeList(out[k], v);
    else if (isObj(v)) out[k] = strategicMerge(out[k], v);
    else out[k] = clone(v);
  }
  return out;
}

function mergeList(target: any[], patch: any[]): any[] {
  const key = mergeKeyOf(patch.filter((x) => !(isObj(x) && x.$patch)).concat(target));
  if (!key) return clone(patch.filter((x) => !(isObj(x) && x.$patch)));
  const out = clone(target);
  for (const item of patch) {
    const idx = out.findIndex((x: any) => x[key] === item[key]);
    if (isObj(item) && item.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
    } else if (idx >= 0) out[idx] = strategicMerge(out[idx], item);
    else out.push(clone(item));
  }
  return out;
}

function pointer(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export class PatchError extends Error {}

export function jsonPatch(target: any, ops: any[]): any {
  let doc = clone(target);
  for (const op of ops) {
    const parts = pointer(op.path);
    const last = parts.pop()!;
    let parent = doc;
    for (const p of parts) {
      parent = parent?.[Array.isArray(parent) ? Number(p) : p];
      if (parent === undefined) throw new PatchError(`jsonpatch ${op.op} operation does not apply: doc is missing path: ${op.path}`);
    }
    const key = Array.isArray(parent) ? (last === '-' ? parent.length : Number(last)) : last;
    switch (op.op) {
      case 'add':
        if (Array.isArray(parent)) parent.splice(key as number, 0, clone(op.value));
        else parent[key] = clone(op.value);
        break;
      case 'replace':
        if (parent[key] === undefined) throw new PatchError(`jsonpatch replace operation does not apply: doc is missing key: ${op.path}`);
        parent[key] = clone(op.value);
        break;
      case 'remove':
        if (parent[key] === undefined) throw new PatchError(`jsonpatch remove operation does not apply: doc is missing path: ${op.path}`);
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key];
        break;
      case 'test':
        if (JSON.stringify(parent[key]) !== JSON.stringify(op.value)) throw new PatchError(`testing value ${op.path} failed`);
        break;
      default:
        throw new PatchError(`unsupported json patch op ${op.op}`);
    }
    if (parts.length === 0 && last === '') doc = op.value;
  }
  return doc;
}

export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';

export function patchTypeOf(contentType: string): PatchType | undefined {
  if (contentType.startsWith('application/merge-patch+json')) return 'merge';
  if (contentType.startsWith('application/strategic-merge-patch+json')) return 'strategic';
  if (contentType.startsWith('application/json-patch+json')) return 'json';
  if (contentType.startsWith('application/apply-patch')) return 'apply';
  return undefined;
}

export function applyPatch(type: PatchType, target: any, patch: any): any {
  switch (type) {
    case 'merge':
      return mergePatch(target, patch);
    case 'strategic':
      return strategicMerge(target, patch);
    case 'json':
      return jsonPatch(target, patch);
    // NOTE: server-side apply is approximated by a strategic merge of the applied configuration: fields
    // the applier owns are set; removal of fields it dropped and field-manager conflicts are not imitated.
    case 'apply':
      return strategicMerge(target, patch);
  }
}
