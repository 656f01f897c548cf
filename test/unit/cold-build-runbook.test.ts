// runbooks/cold-build.md names the causes an operator meets on a cold build: each must be a cause of the
// catalogue, its link must lead to its section in runbooks/causes.md, and every cause of the build's
// areas must be there.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baselineCauses } from '../../src/causes/baseline.ts';
import { isCauseId } from '../../src/causes/catalogue.ts';
import { ciliumCauses } from '../../src/causes/cilium.ts';
import { engineCauses } from '../../src/causes/engine.ts';
import { fluxCauses } from '../../src/causes/flux.ts';
import { inventoryCauses } from '../../src/causes/inventory.ts';
import { k3sCauses } from '../../src/causes/k3s.ts';
import { kubeVipCauses } from '../../src/causes/kubevip.ts';
import { sshCauses } from '../../src/causes/ssh.ts';
import { verifyCauses } from '../../src/causes/verify.ts';

const read = (name: string) => readFileSync(new URL(`../../runbooks/${name}`, import.meta.url), 'utf8');
const coldBuild = read('cold-build.md');
const sections = new Set([...read('causes.md').matchAll(/^## ([A-Z0-9_]+)\s*$/gm)].map((m) => m[1]));
/** [ID](causes.md#anchor) */
const links = [...coldBuild.matchAll(/\[([A-Z0-9_]+)\]\(causes\.md#([^)]*)\)/g)].map((m) => ({ id: m[1], anchor: m[2] }));
/** Every ALL_CAPS_WITH_UNDERSCORE word in backticks, e.g. `SUDO_NEEDS_PASSWORD`, that is written as a cause. */
const named = [...coldBuild.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map((m) => m[1]);

describe('runbooks/cold-build.md', () => {
  it('links only causes of the catalogue, each to its section in causes.md', () => {
    expect(links.length).toBeGreaterThan(50);
    expect(links.filter((l) => !isCauseId(l.id)).map((l) => l.id)).toEqual([]);
    expect(links.filter((l) => l.anchor !== l.id.toLowerCase()).map((l) => `${l.id} → #${l.anchor}`)).toEqual([]);
    expect(links.filter((l) => !sections.has(l.id)).map((l) => l.id)).toEqual([]);
  });

  it('names in its text only causes of the catalogue', () => {
    expect(named.filter((id) => !isCauseId(id))).toEqual([]);
  });

  it("links every cause of the build's areas (inventory, SSH, engine, baseline, k3s, kube-vip, Cilium, verify, Flux)", () => {
    const areas = {
      ...inventoryCauses,
      ...sshCauses,
      ...engineCauses,
      ...baselineCauses,
      ...k3sCauses,
      ...kubeVipCauses,
      ...ciliumCauses,
      ...verifyCauses,
      ...fluxCauses,
    };
    const linked = new Set(links.map((l) => l.id));
    expect(Object.keys(areas).filter((id) => !linked.has(id))).toEqual([]);
  });
});
