// Naming why the VIP does not answer from kube-vip's own log (the messages are kube-vip's and client-go's:
// kube-vip/kube-vip v0.9.2 pkg/kubevip/config_manager.go, cmd/kube-vip.go; v1.0.4 pkg/vip/util.go;
// kubernetes/client-go v0.32.3 tools/leaderelection/leaderelection.go; where the wording changed between
// releases each form is matched). The lines are in test/fixtures/upstream-lines/kube-vip.txt.
import type { CauseId } from '../../src/causes/catalogue.ts';

export interface LogMatch {
  causeId: CauseId;
  /** The log line that showed it. */
  line: string;
}

export const PATTERNS: [RegExp, CauseId][] = [
  [/leases\.coordination\.k8s\.io "?plndr-cp-lock"? is forbidden/, 'KUBE_VIP_RBAC_MISSING'],
  [/dial tcp 10\.43\.0\.1:443: i\/o timeout/, 'KUBE_VIP_SERVICE_HOST_DEADLOCK'],
  [/is not valid interface|Link not found|unable to find interface with default route/i, 'VIP_INTERFACE_INVALID'],
];

/** The first known failure in the log (by the order of the lines), or undefined. */
export function matchKubeVipLog(text: string): LogMatch | undefined {
  for (const line of text.split('\n')) {
    for (const [re, causeId] of PATTERNS) if (re.test(line)) return { causeId, line: line.trim() };
  }
  return undefined;
}
