// Pure: a Cilium agent's view of node-to-node health (`cilium-health status --probe -o json` in its
// container: the HealthStatusResponse of cilium/cilium api/v1/health/models — `local.name`, and per node
// `name`, `host.primary-address` {ip, http {status, latency}, icmp}, `health-endpoint.primary-address`),
// reduced to the paths that failed. An empty `status` is success (pkg/health/server/prober.go). The host
// path is the node's own address on the health port (4240/tcp); the health endpoint sits in the pod network,
// so when only it fails the tunnel between the nodes (VXLAN, 8472/udp) is what is blocked.
const HEALTH_PORT = '4240/tcp';
const VXLAN_PORT = '8472/udp';

interface Unreachable {
  from: string;
  to: string;
  ip: string;
  /** Which path failed and the ports it needs open between the two nodes. */
  path: 'host' | 'health-endpoint';
  ports: string[];
  status: string;
}

export interface NodeHealth {
  local: string;
  reached: string[];
  unreachable: Unreachable[];
}

export function nodeHealth(json: string): NodeHealth | undefined {
  let doc: any;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!doc || !Array.isArray(doc.nodes)) return undefined;
  const local = String(doc.local?.name ?? '');
  const reached: string[] = [];
  const unreachable: Unreachable[] = [];
  for (const n of doc.nodes) {
    const name = String(n?.name ?? '');
    if (!name || name === local) continue;
    const host = n.host?.['primary-address'];
    const ep = n['health-endpoint']?.['primary-address'];
    const failed = (p: any) => Boolean(p?.http?.status) || Boolean(p?.icmp?.status && !p?.http);
    if (failed(host)) {
      unreachable.push({
        from: local,
        to: name,
        ip: String(host.ip ?? ''),
        path: 'host',
        ports: [HEALTH_PORT],
        status: String(host.http?.status || host.icmp?.status),
      });
    } else if (failed(ep)) {
      unreachable.push({
        from: local,
        to: name,
        ip: String(ep.ip ?? ''),
        path: 'health-endpoint',
        ports: [VXLAN_PORT, HEALTH_PORT],
        status: String(ep.http?.status || ep.icmp?.status),
      });
    } else reached.push(name);
  }
  return { local, reached, unreachable };
}
