// The k3s install steps place the air-gap tarball and every k3s.imageArchives file in agent/images on the
// host (servers and agents share these steps), probing by sha256: what is there already is not sent again.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { installSteps } from '../../phases/k3s/install-steps.ts';
import { imagesPlaced } from '../../src/images/pull-cause.ts';
import { sumsProbe } from '../../src/engine/sum-stamps.ts';

const dir = mkdtempSync(join(tmpdir(), 'placement-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return { path: join(dir, name), sha: createHash('sha256').update(text).digest('hex') };
};

describe('image archive placement', () => {
  it('uploads each archive whose copy on the host differs, mode 0644, and nothing when all match', async () => {
    const tarball = file('k3s-airgap-images-amd64.tar.zst', 'k3s images');
    const cilium = file('cilium.tar', 'cilium images');
    const flux = file('flux.tar', 'flux images');
    const ctx: any = { inventory: { derived: { paths: { k3sArtifacts: dir, imageArchives: [{ path: cilium.path }, { path: flux.path }] } } } };
    const step = installSteps(() => 'token').find((s) => s.id === 'images')!;
    const host: any = { name: 'k3s-agent-1', address: '', role: 'agent' };
    const probes = step.probe!(host, ctx);
    const remote = ['k3s-airgap-images-amd64.tar.zst', 'cilium.tar', 'flux.tar'].map((n) => `/var/lib/rancher/k3s/agent/images/${n}`);
    // One probe for every archive, read from their upload stamps (test/unit/sum-stamps.test.ts runs it).
    expect(Object.values(probes).map((p: any) => [p.command, p.sudo])).toEqual([[sumsProbe(remote), true]]);
    const local = await step.local!(host, ctx);
    const out = (sums: string[]) => ({
      sums: { code: sums.includes('') ? 1 : 0, stdout: sums.flatMap((s, i) => (s ? [`${s}  ${remote[i]}\n`] : [])).join(''), stderr: '' },
    });
    const plan = step.plan({ host, ctx, local, probe: out([tarball.sha, '', 'f'.repeat(64)]) } as any) as any;
    expect(plan.changes.map((c: any) => [c.path, c.mode, c.currentSha256])).toEqual([
      ['/var/lib/rancher/k3s/agent/images/cilium.tar', '0644', null],
      ['/var/lib/rancher/k3s/agent/images/flux.tar', '0644', 'f'.repeat(64)],
    ]);
    expect(plan.facts).toEqual([imagesPlaced(true)]);
    const again = step.plan({ host, ctx, local, probe: out([tarball.sha, cilium.sha, flux.sha]) } as any) as any;
    expect(again).toEqual({ changes: [], facts: [imagesPlaced(false)] });
  });
});
