// The objects the flux phase applies, as pure data: Flux's install manifests (what `flux install --export`
// prints), the deploy-key Secret, and the flux-system GitRepository and Kustomization that `flux bootstrap`
// would create. Each carries the sha256 of what was applied in an annotation: the probe compares that
// instead of the live object, which the API server and the controllers fill with defaults and status.
import { createHash } from 'node:crypto';
import { parseAllDocuments, stringify } from 'yaml';
import { CauseError } from '../../src/errors.ts';

export const APPLIED_HASH = 'bootstrap/applied-sha256';
const FLUX_NAMESPACE = 'flux-system';
/** The name `flux bootstrap` gives the Secret, the GitRepository and the Kustomization. */
const SYNC_NAME = 'flux-system';
/** The GitRepository the flux phase applies (syncObjects). */
export const SYNC_SOURCE = { name: SYNC_NAME, namespace: FLUX_NAMESPACE };
/** The CRDs the sync objects need before they can be created. */
const SYNC_CRDS = ['gitrepositories.source.toolkit.fluxcd.io', 'kustomizations.kustomize.toolkit.fluxcd.io'];

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

/** Objects of a multi-document YAML text; FLUX_INSTALL_INVALID names what is wrong. */
export function parseInstall(text: string, file: string): KubeObject[] {
  const docs = parseAllDocuments(text);
  const bad = docs.find((d) => d.errors.length);
  if (bad) throw installInvalid(file, `not valid YAML: ${bad.errors[0].message}`);
  const objects = docs.map((d) => d.toJS() as KubeObject | null).filter((o): o is KubeObject => o != null);
  const nameless = objects.find((o) => !o.apiVersion || !o.kind || !o.metadata?.name);
  if (nameless) throw installInvalid(file, `an object has no apiVersion, kind or metadata.name: ${JSON.stringify(nameless).slice(0, 120)}`);
  const crds = new Set(objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name));
  const missing = SYNC_CRDS.filter((c) => !crds.has(c));
  if (missing.length) throw installInvalid(file, `it defines no CustomResourceDefinition ${missing.join(', ')}`);
  return objects;
}

function installInvalid(file: string, seen: string): CauseError {
  return new CauseError('FLUX_INSTALL_INVALID', { message: `${file}: ${seen}`, evidence: { seen, command: `flux install --export > ${file}` } });
}

/** JSON with keys sorted at every level: the same object always hashes the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function objectHash(o: KubeObject): string {
  return createHash('sha256').update(canonical(o)).digest('hex');
}

/** The object with the hash of its own content in APPLIED_HASH. */
export function withAppliedHash(o: KubeObject): KubeObject {
  const { [APPLIED_HASH]: _old, ...annotations } = o.metadata.annotations ?? {};
  const { annotations: _a, ...meta } = o.metadata;
  const clean: KubeObject = { ...o, metadata: Object.keys(annotations).length ? { ...meta, annotations } : meta };
  return { ...clean, metadata: { ...clean.metadata, annotations: { ...annotations, [APPLIED_HASH]: objectHash(clean) } } };
}

/** `kind.group/name`, what kubectl get takes (core kinds have no group). */
export function kubectlRef(o: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  return `${o.kind.toLowerCase()}${group ? `.${group}` : ''}/${o.metadata.name}`;
}

export const objectKey = (o: { kind: string; metadata: { name: string; namespace?: string } }) =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

export interface Drift {
  create: KubeObject[];
  update: KubeObject[];
}

/** Which desired objects (already carrying their hash) are absent or were applied with other content. */
export function drift(desired: KubeObject[], live: Map<string, string | undefined>): Drift {
  const create: KubeObject[] = [];
  const update: KubeObject[] = [];
  for (const o of desired) {
    const k = objectKey(o);
    if (!live.has(k)) create.push(o);
    else if (live.get(k) !== o.metadata.annotations?.[APPLIED_HASH]) update.push(o);
  }
  return { create, update };
}

/** The text kubectl apply reads on stdin. */
export function toYaml(objects: KubeObject[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

export interface SyncInput {
  url: string;
  branch: string;
  /** gitops.path: the cluster folder in the repository. */
  path: string;
}

/** The GitRepository and the Kustomization `flux bootstrap` creates, for the inventory's gitops section. */
export function syncObjects(s: SyncInput): KubeObject[] {
  const metadata = { name: SYNC_NAME, namespace: FLUX_NAMESPACE };
  return [
    {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata,
      spec: { interval: '1m0s', ref: { branch: s.branch }, secretRef: { name: SYNC_NAME }, url: s.url },
    },
    {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata,
      spec: {
        interval: '10m0s',
        path: `./${s.path.replace(/^\.?\/+/, '').replace(/\/+$/, '')}`,
        prune: true,
        sourceRef: { kind: 'GitRepository', name: SYNC_NAME },
      },
    },
  ].map((o) => withAppliedHash(o));
}

export interface DeployKey {
  identity: string;
  identityPub: string;
  knownHosts: string;
}

/** The Secret `flux bootstrap` makes for an SSH deploy key. Its content is a secret: never print it. */
export function deployKeySecret(k: DeployKey): KubeObject {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return withAppliedHash({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: SYNC_NAME, namespace: FLUX_NAMESPACE },
    type: 'Opaque',
    data: { identity: b64(k.identity), 'identity.pub': b64(k.identityPub), known_hosts: b64(k.knownHosts) },
  });
}
