// cilium: the CNI, with kube-proxy replacement, dialling the control-plane VIP. Its values are Flux's
// HelmRelease values for this environment, substituted exactly as Flux will (fail closed), so Flux adopts
// the release later without a fight. Everything is decided before the first phase changes anything.
// After the flux phase's hand-over (HelmChart deleted, HelmRelease present) the step plans nothing, in
// check mode too, and the gate still checks the live agents: a rerun never brings the HelmChart back.
import { readFile } from 'node:fs/promises';
import { CauseError, causesOf } from '../src/errors.ts';
import type { Phase } from '../src/engine/phase.ts';
import { PHASE_FACTS } from '../src/engine/phase.ts';
import { allHostRefs, founderRef } from '../src/inventory/hosts.ts';
import { unlessFluxOwns, type CiliumRelease } from './cilium/flux-owned.ts';
import { cgroupProbeCommand, cgroupSetting, checkCgroupHostRoot, type CgroupSetting } from './cilium/cgroup.ts';
import { HELMCHART_MANIFEST } from '../src/k3s/helmchart.ts';
import { ciliumInstallPlan } from './cilium/install-plan.ts';
import { ciliumRolledOut } from './cilium/rollout-gate.ts';
import { notingRelease } from './cilium/release-wait.ts';
import { ciliumValuesFor } from '../src/gitops/values-source.ts';
import { managedFile } from './steps/managed-file.ts';

export const cilium: Phase = {
  id: 'cilium',
  title: 'install Cilium dialling the VIP',
  needs: ['kube-vip', 'agents'],
  hosts: (c) => founderRef(c.inventory),
  concurrency: 'serial',
  async prepare(ctx) {
    const chartPath = ctx.inventory.derived.paths.ciliumChart;
    if (!chartPath || !ctx.inventory.inventory.gitops) {
      const seen = 'the inventory has no gitops and cilium sections: the values come from the GitOps HelmRelease, so the cilium phase needs both';
      return { stops: [new CauseError('GITOPS_SOURCE_INVALID', { message: seen, evidence: { seen, excerpt: 'gitops: { checkout, url, branch, path }\ncilium: { chart, helmRelease }' } })] };
    }
    try {
      const source = await ciliumValuesFor(ctx.inventory);
      const plan = ciliumInstallPlan(ctx.inventory, source, await readFile(chartPath), chartPath);
      const ciliumRelease: CiliumRelease = { helmChart: { name: source.releaseName, namespace: 'kube-system' }, helmRelease: source.helmRelease };
      const ciliumHelmRelease = { name: source.releaseName, namespace: source.namespace };
      return { stops: plan.stops, facts: { ciliumManifest: plan.manifest, ciliumCgroup: cgroupSetting(source.values), ciliumRelease, ciliumHelmRelease } };
    } catch (err) {
      const causes = causesOf(err);
      if (!causes.length) throw err;
      return { stops: causes };
    }
  },
  // cgroup.hostRoot must be a real cgroup2 mount on every node (the 2026-10-03 socket-LB breakage).
  preflight: {
    hosts: (c) => allHostRefs(c.inventory),
    probe: (_h, ctx) => ({ cgroup: { command: cgroupProbeCommand(ctx.facts.get<CgroupSetting>(PHASE_FACTS, 'ciliumCgroup')!) } }),
    check: (seen, ctx) =>
      checkCgroupHostRoot(
        ctx.facts.get<CgroupSetting>(PHASE_FACTS, 'ciliumCgroup')!,
        [...seen].map(([h, p]) => ({ host: h.name, stdout: p.cgroup.stdout, code: p.cgroup.code })),
        'before-install',
      ),
  },
  steps: [
    // Once the flux phase handed Cilium to its HelmRelease, this plans nothing (cilium/flux-owned.ts). A new
    // HelmChart notes the release's revision before it, for the gate to wait for its install.
    notingRelease(
      unlessFluxOwns(
        managedFile({
          id: 'helmchart',
          title: `Cilium HelmChart ${HELMCHART_MANIFEST}`,
          path: () => HELMCHART_MANIFEST,
          local: async () => undefined,
          content: (_l, _h, ctx) => ctx.facts.get<string>(PHASE_FACTS, 'ciliumManifest')!,
          mode: '0600',
        }),
      ),
    ),
  ],
  gates: [ciliumRolledOut],
};
