// A phase that needs an optional inventory section (gitops, cilium, flux) the file lacks: one stop that
// names exactly the missing sections, with each one's example to copy (inventory/prod.yaml holds the same;
// test/unit/inventory-sections.test.ts keeps them in step).
import { CauseError } from '../errors.ts';
import type { Inventory } from './types.ts';

export type OptionalSection = 'gitops' | 'cilium' | 'flux';

export const SECTION_EXAMPLES: Record<OptionalSection, string> = {
  gitops: ['gitops:', '  checkout: ../home-network', '  url: ssh://git@git.example/home-network.git', '  branch: main', '  path: clusters/prod'].join('\n'),
  cilium: ['cilium:', '  chart: ../artifacts/cilium-1.19.5.tgz', '  helmRelease: platform/cilium/helmrelease.yaml'].join('\n'),
  flux: [
    'flux:',
    '  install: ../artifacts/flux-install.yaml',
    '  deployKeyFile: ~/.config/bootstrap/prod-deploy-key',
    '  knownHostsFile: ~/.config/bootstrap/prod-gitops-known-hosts',
  ].join('\n'),
};

/** Undefined when every section is there; else INVENTORY_SECTION_MISSING naming the missing ones. */
export function missingSections(
  inventory: Inventory,
  phase: { id: string; before: string },
  needed: OptionalSection[],
  why: string,
): CauseError | undefined {
  const missing = needed.filter((s) => inventory[s] === undefined || inventory[s] === null);
  if (!missing.length) return undefined;
  const names = missing.join(' and ');
  const seen = `the inventory has no ${names} section${missing.length > 1 ? 's' : ''}: ${why}`;
  return new CauseError('INVENTORY_SECTION_MISSING', {
    message: `The ${phase.id} phase needs the inventory's ${names} section${missing.length > 1 ? 's' : ''}`,
    evidence: { seen, excerpt: missing.map((s) => SECTION_EXAMPLES[s]).join('\n') },
    remedy: `Add ${missing.map((s) => `a ${s} section`).join(' and ')} to the inventory (the example above, also in inventory/prod.yaml and README "The inventory"), with your own paths and URL; or end the run before ${phase.id} (--until ${phase.before}).`,
  });
}
