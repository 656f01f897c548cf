// cilium: the CNI, with kube-proxy replacement, dialling the control-plane VIP. Its values are Flux's
// HelmRelease values for this environment, substituted exactly as Flux will (fail closed), so Flux adopts
// the release later without a fight. Everything is decided before the first phase changes anything.
// After the flux phase's hand-over (HelmChart deleted, HelmRelease present) the step plans nothing, in
// check mode too, and the gate still checks the live agents: a rerun never brings the HelmChart back.
import { readFile } from 'node:fs/promises';
import { causesOrThrow } from '../src/errors.ts';
import { runFact } from '../src/engine/facts.ts';
import type { Phase } from '../src/engine/phase.ts';
import { allHostRefs, founderRef } from '../src/inventory/hosts.ts';
import { missingSections } from '../src/inventory/sections.ts';
import { unlessFluxOwns } from './cilium/flux-owned.ts';
import { cgroupProbeCommand, cgroupSetting, checkCgroupHostRoot, type CgroupSetting } from './cilium/cgroup.ts';
import { HELMCHART_MANIFEST } from '../src/k3s/helmchart.ts';
import { ciliumInstallPlan } from './cilium/install-plan.ts';
import { chartInfo, schemaViolations } from './cilium/chart.ts';
import { factKey, remembered } from '../src/util/file-memo.ts';
import { ciliumRolledOut } from './cilium/rollout-gate.ts';
import { notingRelease } from './cilium/release-wait.ts';
import { renderCiliumRelease } from '../src/gitops/cilium-release.ts';
import { managedFile } from './steps/managed-file.ts';

/** What the cilium phase's prepare decided: the HelmChart manifest, and the cgroup setting its preflight checks. */
const prepared = runFact<{ manifest: string; cgroup: CgroupSetting }>('cilium.prepared');

export const cilium: Phase = {
  id: 'cilium',
  title: 'install Cilium dialling the VIP',
  needs: ['kube-vip', 'agents'],
  hosts: (c) => founderRef(c.inventory),
  concurrency: 'serial',
  async prepare(ctx) {
    const chartPath = ctx.inventory.derived.paths.ciliumChart;
    const missing = missingSections(
      ctx.inventory.inventory,
      { id: 'cilium', before: 'agents' },
      ['gitops', 'cilium'],
      "Cilium's values come from the GitOps repository's HelmRelease",
    );
    if (missing) return { stops: [missing] };
    // derive sets the path whenever the cilium section is there (src/inventory/derive.ts).
    if (!chartPath) throw new Error('the inventory has a cilium section but no derived chart path');
    try {
      const { source } = await renderCiliumRelease(ctx);
      const tgz = await readFile(chartPath);
      // The schema check is most of the phase's local CPU: remembered for this chart file and these values.
      const violations = await remembered(factKey('cilium-values-schema', chartPath, source.values), async () =>
        schemaViolations(source.values, chartInfo(tgz, chartPath).schema),
      );
      // So is the chart's name and version: unpacking the chart (gunzip, tar, Chart.yaml) is the rest of it.
      const chart = await remembered(factKey('cilium-chart-version', chartPath), async () => {
        const { name, version } = chartInfo(tgz, chartPath);
        return { name, version };
      });
      const plan = ciliumInstallPlan(ctx.inventory, source, tgz, chartPath, violations, chart);
      // No manifest: the plan's stops stop the run before any preflight or step reads it.
      return { stops: plan.stops, facts: plan.manifest === undefined ? [] : [prepared({ manifest: plan.manifest, cgroup: cgroupSetting(source.values) })] };
    } catch (err) {
      return { stops: causesOrThrow(err) };
    }
  },
  // cgroup.hostRoot must be a real cgroup2 mount on every node (the 2026-10-03 socket-LB breakage).
  preflight: {
    hosts: (c) => allHostRefs(c.inventory),
    probe: (_h, ctx) => ({ cgroup: { command: cgroupProbeCommand(ctx.facts.need(prepared).cgroup) } }),
    check: (seen, ctx) =>
      checkCgroupHostRoot(
        ctx.facts.need(prepared).cgroup,
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
          content: (_l, _h, ctx) => ctx.facts.need(prepared).manifest,
          mode: '0600',
        }),
      ),
    ),
  ],
  gates: [ciliumRolledOut],
};
