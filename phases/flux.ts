// flux: hands the cluster to GitOps, as `flux bootstrap` would but without the CLI or write access to the
// repository. In order: Flux's install manifests, a wait until their CRDs are Established (one apply of
// everything fails upstream: `no matches for kind "GitRepository"`), the deploy-key Secret, the flux-system
// GitRepository and Kustomization. Then Cilium changes hands: once Flux is Ready and its HelmRelease adopted
// the release with the same values (and without rolling the agents), the bootstrap's HelmChart goes.
// The gate waits for Flux Ready and names the ROOT of a failure (root-cause.ts), then proves parity again.
//
// Re-runs and check mode: every object carries the hash of what was applied, so a converged cluster plans
// nothing (0 changed; --check 0 would change). Once the HelmChart is gone the hand-over plans nothing and the
// cilium phase sees Flux owning Cilium (phases/cilium.ts), so neither recreates it. The gate compares the
// live HelmRelease with what the bootstrap renders from the checkout: drift there is CILIUM_PARITY_DRIFT.
import { readFile } from 'node:fs/promises';
import { factKey, remembered } from '../src/util/file-memo.ts';
import { causesOrThrow } from '../src/errors.ts';
import type { ReadContext } from '../src/engine/context.ts';
import { runFact } from '../src/engine/facts.ts';
import type { Gate, Phase } from '../src/engine/phase.ts';
import { renderCiliumRelease } from '../src/gitops/cilium-release.ts';
import { founderRef } from '../src/inventory/hosts.ts';
import { missingSections } from '../src/inventory/sections.ts';
import { apiRead } from '../src/kube/api-read.ts';
import { appliedObjects, FLUX_APPLY_STEPS } from './flux/applied-step.ts';
import { readDeployKey } from './flux/deploy-key.ts';
import {
  checkAdoption,
  ciliumGenerationBefore,
  DAEMONSET_PROBE,
  handoverStep,
  helmChartAbsent,
  helmChartRead,
  ownershipOf,
  templateGenerationOf,
} from './flux/handover.ts';
import { checkoutRevision, readCheckoutRevision } from './flux/checkout-revision.ts';
import { crdWaitChange } from './flux/install-wait.ts';
import { deployKeySecret, parseInstall, syncObjects, withAppliedHash, type KubeObject } from './flux/manifests.ts';
import { helmChartValues } from './flux/parity.ts';
import { FLUX_WAIT_MAX_MS, fluxWaitSignal } from './flux/ready-wait.ts';

/** The objects the flux phase's prepare read and rendered: Flux's install, the deploy-key Secret, the sync objects. */
const prepared = runFact<{ install: KubeObject[]; secret: KubeObject[]; sync: KubeObject[] }>('flux.prepared');
const installObjects = (ctx: ReadContext) => ctx.facts.need(prepared).install;
const secretObjects = (ctx: ReadContext) => ctx.facts.need(prepared).secret;
const sync = (ctx: ReadContext) => ctx.facts.need(prepared).sync;

const fluxReady: Gate = {
  id: 'flux-ready',
  title: 'Flux Ready (source, every Kustomization, the Cilium HelmRelease) with the same Cilium values',
  budgetMs: FLUX_WAIT_MAX_MS,
  async run(host, ctx, budget) {
    const signal = fluxWaitSignal(ctx, budget);
    const o = ownershipOf(ctx);
    // Gone when the hand-over's probe read it: not read again.
    const chart = ctx.facts.get(host.name, helmChartAbsent) ? { code: 1, stdout: '' } : await apiRead(ctx, host, helmChartRead(o.helmChart));
    const reference =
      chart.code === 0
        ? { values: helmChartValues(JSON.parse(chart.stdout)), whose: `the bootstrap's HelmChart ${o.helmChart.namespace}/${o.helmChart.name}` }
        : { values: o.values, whose: 'the values the bootstrap renders from gitops.checkout' };
    await checkAdoption(ctx, host, signal, reference);
  },
};

export const flux: Phase = {
  id: 'flux',
  title: 'hand the cluster over to Flux',
  needs: ['verify'],
  hosts: (c) => founderRef(c.inventory),
  concurrency: 'serial',
  async prepare(ctx) {
    const { flux: f, gitops } = ctx.inventory.inventory;
    const p = ctx.inventory.derived.paths;
    const missing = missingSections(
      ctx.inventory.inventory,
      { id: 'flux', before: 'verify' },
      ['gitops', 'flux'],
      'the flux phase applies flux.install and syncs gitops.url',
    );
    if (missing) return { stops: [missing] };
    // derive sets the paths whenever the gitops and flux sections are there (src/inventory/derive.ts).
    if (!f || !gitops || !p.fluxInstall || !p.fluxDeployKeyFile || !p.fluxKnownHostsFile)
      throw new Error('the inventory has gitops and flux sections but no derived flux paths');
    try {
      // Parsing Flux's install manifests (thousands of lines of CRDs) is most of the phase's local CPU: the
      // objects are remembered for this file (src/util/file-memo.ts), a converged run reads them as JSON.
      const fluxInstall = p.fluxInstall;
      const install = await remembered(factKey('flux-install-objects', fluxInstall), async () =>
        parseInstall(await readFile(fluxInstall, 'utf8'), fluxInstall).map((o) => withAppliedHash(o)),
      );
      const key = await readDeployKey(p.fluxDeployKeyFile, p.fluxKnownHostsFile, (s) => ctx.redact(s));
      // The hand-over and the gate read Cilium's release (src/gitops/cilium-release.ts), rendered once a run.
      await renderCiliumRelease(ctx);
      // What the GitRepository serves when it holds the checkout: then a converged run needs no fetch to prove it.
      const revision = p.gitopsCheckout ? await readCheckoutRevision(p.gitopsCheckout, gitops.branch) : undefined;
      return {
        stops: [],
        facts: [prepared({ install, secret: [deployKeySecret(key)], sync: syncObjects(gitops) }), checkoutRevision(revision)],
      };
    } catch (err) {
      return { stops: causesOrThrow(err) };
    }
  },
  steps: [
    appliedObjects({
      id: FLUX_APPLY_STEPS[0],
      title: "Flux's install manifests (flux.install)",
      objects: installObjects,
      // The cilium DaemonSet's template generation before anything of Flux runs: a roll across the hand-over shows.
      probe: () => ({ ciliumDs: DAEMONSET_PROBE }),
      extend: (live, probe, ctx, d, host) => ({
        changes: crdWaitChange(installObjects(ctx), live, d, host.name),
        facts: [ciliumGenerationBefore(templateGenerationOf(probe.ciliumDs.stdout, probe.ciliumDs.code))],
      }),
    }),
    appliedObjects({ id: FLUX_APPLY_STEPS[1], title: 'deploy-key Secret flux-system/flux-system', objects: secretObjects, secret: true }),
    appliedObjects({ id: FLUX_APPLY_STEPS[2], title: 'GitRepository and Kustomization flux-system', objects: sync }),
    handoverStep,
  ],
  gates: [fluxReady],
};
