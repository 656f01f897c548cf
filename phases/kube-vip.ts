// kube-vip: the control-plane VIP, announced by kube-vip from every server's auto-deploy folder (so a
// rebuilt server carries it too), then a wait until the VIP answers. It runs after the joins (it is a k3s
// manifest, so it needs a cluster) and before Cilium, which dials the VIP: announcing first is what makes
// the 2026-09-01 deadlock impossible. kube-vip dials the local API (127.0.0.1:6443), needing no CNI.
import type { Phase } from '../src/engine/phase.ts';
import { runFact } from '../src/engine/facts.ts';
import { serverRefs } from '../src/inventory/hosts.ts';
import { parallelismOf } from '../src/inventory/parallelism.ts';
import { kubeVipManifest, VIP_NIC_PROBES } from './kube-vip/manifest.ts';
import { KUBE_VIP_MANIFEST } from './kube-vip/render.ts';
import { vipAnswers } from './kube-vip/vip-gate.ts';
import { managedFile } from './steps/managed-file.ts';

/**
 * The one manifest every server gets, and the NIC it announces the VIP on, from the preflight. Set only when
 * the preflight chose a NIC: otherwise it stopped the run before any step.
 */
const vipManifest = runFact<{ content: string; interfaceName: string }>('kube-vip.manifest');

export const kubeVip: Phase = {
  id: 'kube-vip',
  title: 'announce the control-plane VIP and wait until it answers',
  needs: ['k3s-join'],
  hosts: (c) => serverRefs(c.inventory),
  concurrency: (c) => parallelismOf(c.inventory),
  // kube-vip's vip_interface is one value for the DaemonSet: every server's NIC is probed first (read-only).
  preflight: {
    probe: () => VIP_NIC_PROBES,
    check: (seen, ctx) => {
      const servers = [...seen].map(([h, p]) => ({ name: h.name, address: h.address, addrs: p.addrs.stdout, links: p.links.stdout }));
      const manifest = kubeVipManifest(ctx.inventory, servers);
      const { content, interfaceName } = manifest;
      return { stops: manifest.stops, facts: content !== undefined && interfaceName !== undefined ? [vipManifest({ content, interfaceName })] : [] };
    },
  },
  steps: [
    managedFile({
      id: 'manifest',
      title: `kube-vip manifest ${KUBE_VIP_MANIFEST}`,
      path: () => KUBE_VIP_MANIFEST,
      local: async () => undefined,
      content: (_l, _h, ctx) => ctx.facts.need(vipManifest).content,
      mode: '0600',
    }),
  ],
  gates: [vipAnswers],
};
