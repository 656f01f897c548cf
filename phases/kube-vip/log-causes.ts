// Naming why the VIP does not answer from kube-vip's own log. The words are kube-vip's and client-go's, for
// the pinned kube-vip v0.9.2 and, where they changed, v1.x too:
// - interface: kube-vip/kube-vip v0.9.2 pkg/kubevip/config_manager.go (`%s is not valid interface, reason: %w`,
//   `%s is not up`), v0.9.2 pkg/vip/util.go (`Unable to find default route`, `Found default route but could
//   not determine interface`), v1.0.4 pkg/vip/util.go (`unable to find interface with default route: %w`);
// - RBAC: the apiserver's Forbidden (kubernetes/apimachinery pkg/api/errors/errors.go NewForbidden: `%s %q is
//   forbidden: %v` with a name, `%s is forbidden: %v` without: a create names no object), printed by
//   kubernetes/client-go v0.32.3 tools/leaderelection/leaderelection.go after `error retrieving resource
//   lock`, `error initially creating leader election record` or `Failed to update lock`;
// - the deadlock: Go's dial timeout to the `kubernetes` Service's ClusterIP, the first address of the
//   service network (derived from k3s.serviceCidr, never written here).
// The lines are in test/fixtures/upstream-lines/kube-vip.txt.
import type { CauseId } from '../../src/causes/catalogue.ts';
import type { LogMatch } from '../../src/causes/log-match.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The patterns for a cluster whose `kubernetes` Service has ClusterIP `kubernetesIp`. */
function kubeVipPatterns(kubernetesIp: string): [RegExp, CauseId][] {
  return [
    [/leases\.coordination\.k8s\.io (?:"plndr-cp-lock" )?is forbidden/, 'KUBE_VIP_RBAC_MISSING'],
    [new RegExp(`dial tcp ${escaped(kubernetesIp)}:443: i/o timeout`), 'KUBE_VIP_SERVICE_HOST_DEADLOCK'],
    [
      /is not valid interface|Link not found|Unable to find default route|Found default route but could not determine interface|unable to find interface with default route/,
      'VIP_INTERFACE_INVALID',
    ],
  ];
}

/** The first known failure in the log (by the order of the lines), or undefined. */
/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { kubeVipPatterns: ({ kubernetesIp }) => kubeVipPatterns(kubernetesIp).map(([re]) => re) };

export function matchKubeVipLog(text: string, kubernetesIp: string): LogMatch | undefined {
  const patterns = kubeVipPatterns(kubernetesIp);
  for (const line of text.split('\n')) {
    for (const [re, causeId] of patterns) if (re.test(line)) return { causeId, line: line.trim() };
  }
  return undefined;
}
