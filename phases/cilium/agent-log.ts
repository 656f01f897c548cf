// Naming a Cilium pod's failure from its containers' logs (the config init container's and the agent's:
// both start Cilium's k8s client, cilium/cilium pkg/k8s/client/cell.go `waitForConn`, which logs
// `Unable to contact k8s api-server` with client-go's error after a minute of tries; the lines are in
// test/fixtures/upstream-lines/cilium.txt). Without KUBERNETES_SERVICE_HOST (k8sServiceHost empty) the
// client dials the `kubernetes` Service's ClusterIP (the first address of k3s.serviceCidr), which only
// Cilium itself could route (cilium issue #35440): that deadlock is named first; any other address it
// cannot reach is CILIUM_API_UNREACHABLE.
import type { LogMatch } from '../../src/causes/log-match.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The dial timeout to this cluster's `kubernetes` ClusterIP. */
const fallbackPattern = (kubernetesIp: string) => new RegExp(`dial tcp ${escaped(kubernetesIp)}:443: i/o timeout`);
const UNREACHABLE = /msg="?Unable to contact k8s api-server"?/;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { fallbackPattern: ({ kubernetesIp }) => fallbackPattern(kubernetesIp), UNREACHABLE };

export function matchCiliumAgentLog(text: string, kubernetesIp: string): LogMatch | undefined {
  const fallback = fallbackPattern(kubernetesIp);
  const lines = text.split('\n');
  for (const line of lines) if (fallback.test(line)) return { causeId: 'CILIUM_SERVICE_HOST_FALLBACK', line: line.trim() };
  for (const line of lines) if (UNREACHABLE.test(line)) return { causeId: 'CILIUM_API_UNREACHABLE', line: line.trim() };
  return undefined;
}
