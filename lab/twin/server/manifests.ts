// Auto-deploying manifests (k3s pkg/deploy, docs installation/packaged-components): every .yaml/.yml/.json
// file in <data-dir>/server/manifests is applied at start and again when its content changes, tracked as
// an AddOn (k3s.cattle.io/v1) in kube-system. Deleting a file deletes nothing. `foo.yaml.skip` skips foo.yaml.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import YAML from 'yaml';
import { log } from '../log.ts';
import type { ResourceRegistry } from '../api/resources.ts';
import type { ObjectStore } from '../api/store.ts';
import { strategicMerge } from '../api/patch.ts';
import { ApiError } from '../api/status.ts';

async function applyObject(store: ObjectStore, registry: ResourceRegistry, obj: any): Promise<void> {
  const info = await registry.findKind(obj.apiVersion ?? '', obj.kind ?? '');
  if (!info) throw new Error(`no matches for kind "${obj.kind}" in version "${obj.apiVersion}"`);
  const ns = info.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
  const name = obj.metadata?.name;
  const current = await store.tryGet(info, ns, name);
  if (!current) {
    await store.create(info, ns, obj);
  } else {
    await store.update(info, ns, name, strategicMerge(current, obj), { expectedRV: current.metadata.resourceVersion, keepStatus: info.status });
  }
  if (info.resource === 'customresourcedefinitions') registry.invalidate();
}

export function manifestDocs(text: string): any[] {
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJSON())
    .filter((o) => o && typeof o === 'object' && o.kind)
    .flatMap((o) => (o.kind.endsWith('List') && Array.isArray(o.items) ? o.items : [o]));
}

export class ManifestDeployer {
  private applied = new Map<string, string>();
  private timer?: NodeJS.Timeout;

  constructor(
    private dir: string,
    private store: ObjectStore,
    private registry: ResourceRegistry,
    private mark: (file: string, sum: string) => Promise<void>,
  ) {}

  start(intervalMs = 3000): void {
    mkdirSync(this.dir, { recursive: true });
    const tick = async () => {
      await this.scan().catch(() => undefined);
      this.timer = setTimeout(tick, intervalMs);
    };
    void tick();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  async scan(): Promise<void> {
    if (!existsSync(this.dir)) return;
    for (const f of readdirSync(this.dir)
      .filter((n) => /\.(ya?ml|json)$/.test(n))
      .sort()) {
      const path = join(this.dir, f);
      if (existsSync(`${path}.skip`)) continue;
      const text = readFileSync(path, 'utf8');
      const sum = createHash('sha256').update(text).digest('hex');
      if (this.applied.get(path) === sum) continue;
      try {
        const docs = manifestDocs(text);
        // CRDs first, so custom resources in the same file find their kind.
        docs.sort((a, b) => Number(b.kind === 'CustomResourceDefinition') - Number(a.kind === 'CustomResourceDefinition'));
        for (const d of docs) await applyObject(this.store, this.registry, d);
        await this.mark(path, sum);
        this.applied.set(path, sum);
        log.info(`Applied manifest ${basename(path)}`);
      } catch (e) {
        const msg = e instanceof ApiError ? e.message : (e as Error).message;
        log.error(`Failed to process config: failed to process ${path}: ${msg}`);
      }
    }
  }
}
