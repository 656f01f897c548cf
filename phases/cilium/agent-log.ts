// Naming a Cilium agent's failure from its log: without KUBERNETES_SERVICE_HOST (k8sServiceHost empty)
// the agent dials the ClusterIP, which only Cilium itself could route (cilium issue #35440; the line is
// cilium/cilium pkg/k8s/client/cell.go `waitForConn`'s `Unable to contact k8s api-server`, recorded in
// test/fixtures/upstream-lines/cilium.txt).
import type { LogMatch } from '../kube-vip/log-causes.ts';

export const FALLBACK = /dial tcp 10\.43\.0\.1:443: i\/o timeout/;

export function matchCiliumAgentLog(text: string): LogMatch | undefined {
  for (const line of text.split('\n')) if (FALLBACK.test(line)) return { causeId: 'CILIUM_SERVICE_HOST_FALLBACK', line: line.trim() };
  return undefined;
}
