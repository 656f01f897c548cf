// RFC 6902 JSON Patch, the form kustomize applies for `patches:` whose text is a list of operations.
// Pure: returns a new document or throws a PatchError saying which operation failed and why.

export interface PatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PatchError';
  }
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`path "${path}" is not a JSON pointer (it must start with /)`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

type Container = Record<string, unknown> | unknown[];

function parentOf(doc: unknown, tokens: string[], path: string): { parent: Container; key: string } {
  let cur: unknown = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (cur && typeof cur === 'object') cur = (cur as Record<string, unknown>)[t];
    else cur = undefined;
    if (cur === undefined || cur === null || typeof cur !== 'object') throw new PatchError(`path "${path}": its parent does not exist`);
  }
  return { parent: cur as Container, key: tokens[tokens.length - 1] };
}

function has(parent: Container, key: string): boolean {
  return Array.isArray(parent) ? Number(key) >= 0 && Number(key) < parent.length : Object.hasOwn(parent, key);
}

function get(doc: unknown, path: string): unknown {
  const tokens = pointer(path);
  if (!tokens.length) return doc;
  const { parent, key } = parentOf(doc, tokens, path);
  if (!has(parent, key)) throw new PatchError(`path "${path}" does not exist`);
  return Array.isArray(parent) ? parent[Number(key)] : parent[key];
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const tokens = pointer(path);
  if (!tokens.length) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new PatchError(`path "${path}": index out of range`);
    parent.splice(i, 0, value);
  } else parent[key] = value;
  return doc;
}

function remove(doc: unknown, path: string): unknown {
  const tokens = pointer(path);
  const { parent, key } = parentOf(doc, tokens, path);
  if (!has(parent, key)) throw new PatchError(`remove: path "${path}" does not exist`);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
  return doc;
}

/** Apply the operations in order to a copy of `doc`. */
export function applyJsonPatch(doc: unknown, ops: PatchOp[]): unknown {
  let out: unknown = structuredClone(doc);
  for (const op of ops) {
    if (!op || typeof op !== 'object' || typeof op.path !== 'string') throw new PatchError(`not an operation: ${JSON.stringify(op)}`);
    switch (op.op) {
      case 'add':
        out = add(out, op.path, structuredClone(op.value));
        break;
      case 'remove':
        out = remove(out, op.path);
        break;
      case 'replace': {
        // NOTE: as kustomize (observed with v5.5): replacing a missing key of an existing map adds it;
        // a missing parent, or an array index that does not exist, is an error.
        const tokens = pointer(op.path);
        const { parent, key } = tokens.length ? parentOf(out, tokens, op.path) : { parent: undefined, key: '' };
        if (!parent) out = structuredClone(op.value);
        else if (Array.isArray(parent)) {
          if (!has(parent, key)) throw new PatchError(`replace: path "${op.path}" does not exist`);
          parent[Number(key)] = structuredClone(op.value);
        } else parent[key] = structuredClone(op.value);
        break;
      }
      case 'move': {
        const v = get(out, op.from ?? '');
        out = add(remove(out, op.from ?? ''), op.path, v);
        break;
      }
      case 'copy':
        out = add(out, op.path, structuredClone(get(out, op.from ?? '')));
        break;
      case 'test':
        if (JSON.stringify(get(out, op.path)) !== JSON.stringify(op.value)) throw new PatchError(`test: ${op.path} is not ${JSON.stringify(op.value)}`);
        break;
      default:
        throw new PatchError(`unknown operation "${op.op}"`);
    }
  }
  return out;
}
