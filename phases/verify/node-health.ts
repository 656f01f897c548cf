// Pure: a Cilium agent's view of node-to-node health (`cilium-health status -o json` in its container: the
// HealthStatusResponse of cilium/cilium api/v1/health/openapi.yaml — `timestamp`, `probeInterval`,
// `local.name`, and per node `name`, `host.primary-address` {ip, http {latency, status, lastProbed}, icmp},
// `health-endpoint.primary-address`), reduced to the paths that failed and the nodes it has no result for.
//
// The report is what the agent's prober last PUBLISHED, not a probe made when asked: since Cilium 1.17
// (commit 282dcb73, "pkg/health: rate limit health prober") `--probe` returns the most recent results too, and
// in v1.19 (@f12299b2 pkg/health/server/server.go, prober.go) the prober greets one address every interval /
// addresses, the interval being (10 + ratio × 100) s × ln(1 + addresses), and publishes its results at each
// round's end and every 60 s. So a node appears in the report only at a publication after the agent learnt of
// it (`"nodes": null` before the first), is listed with no result until its first probe (setNodes: a
// PathStatus with only `ip`), and a failure shows a probe made up to about two rounds ago.
// An empty `status` is success (prober.go httpProbe). The host path is the node's own address on the health
// port (4240/tcp); the health endpoint sits in the pod network, so when only it fails the tunnel between the
// nodes (VXLAN, 8472/udp) is what is blocked.
const HEALTH_PORT = '4240/tcp';
const VXLAN_PORT = '8472/udp';

export interface Unreachable {
  from: string;
  to: string;
  ip: string;
  /** Which path failed and the ports it needs open between the two nodes. */
  path: 'host' | 'health-endpoint';
  ports: string[];
  status: string;
  /** When the failing probe completed (RFC 3339), when the report says. */
  lastProbed?: string;
}

export interface NodeHealth {
  local: string;
  reached: string[];
  unreachable: Unreachable[];
  /** Nodes expected that the report has no result for yet (not listed, or listed before their first probe). */
  unprobed: string[];
  /** The report's round start and interval as Cilium prints them (`2026-12-07T19:03:02Z`, `1m57.5s`). */
  timestamp?: string;
  probeInterval?: string;
}

type Path = { ip?: string; http?: { status?: string; lastProbed?: string }; icmp?: { status?: string; lastProbed?: string } } | undefined;

const probed = (p: Path) => Boolean(p?.http || p?.icmp);
const failed = (p: Path) => Boolean(p?.http?.status) || Boolean(p?.icmp?.status && !p?.http);

/**
 * `json`: the report; `self`: the node it came from (a report published before the agent knew its own name has
 * an empty `local.name`); `expected`: every other node of the cluster, each of which must have a result (when
 * given, the report's other nodes are left out).
 */
export function nodeHealth(json: string, opts: { self?: string; expected?: string[] } = {}): NodeHealth | undefined {
  let doc: any;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!doc || typeof doc !== 'object' || !('nodes' in doc) || (doc.nodes !== null && !Array.isArray(doc.nodes))) return undefined;
  const local = String(doc.local?.name || opts.self || '');
  const nodes: any[] = doc.nodes ?? [];
  const reached: string[] = [];
  const unreachable: Unreachable[] = [];
  const unprobed: string[] = [];
  const wanted = opts.expected && new Set(opts.expected);
  for (const n of nodes) {
    const name = String(n?.name ?? '');
    // A node the cluster no longer has stays in a report until Cilium's next round: only the expected count.
    if (!name || name === local || (wanted && !wanted.has(name))) continue;
    const host: Path = n.host?.['primary-address'];
    const ep: Path = n['health-endpoint']?.['primary-address'];
    const one = (p: Path, path: Unreachable['path'], ports: string[]): Unreachable => ({
      from: local,
      to: name,
      ip: String(p?.ip ?? ''),
      path,
      ports,
      status: String(p?.http?.status || p?.icmp?.status),
      ...((p?.http?.lastProbed || p?.icmp?.lastProbed) && { lastProbed: String(p?.http?.lastProbed || p?.icmp?.lastProbed) }),
    });
    if (!probed(host)) unprobed.push(name);
    else if (failed(host)) unreachable.push(one(host, 'host', [HEALTH_PORT]));
    else if (failed(ep)) unreachable.push(one(ep, 'health-endpoint', [VXLAN_PORT, HEALTH_PORT]));
    else reached.push(name);
  }
  const listed = new Set(nodes.map((n) => String(n?.name ?? '')));
  for (const name of opts.expected ?? []) if (name !== local && !listed.has(name)) unprobed.push(name);
  return {
    local,
    reached,
    unreachable,
    unprobed,
    ...(typeof doc.timestamp === 'string' && { timestamp: doc.timestamp }),
    ...(typeof doc.probeInterval === 'string' && { probeInterval: doc.probeInterval }),
  };
}

/**
 * The clocks of the operator's machine and a node may differ by node-baseline's limit (2 s, CLOCK_SKEW), and
 * `lastProbed` counts whole seconds: a probe is after a moment of the operator's only when it is later by more.
 */
const CLOCK_MARGIN_MS = 3_000;

/**
 * Whether a failure is proven, not a leftover: the pair failed in a probe made after the check first saw it
 * failing (`firstSeenMs`, the operator's clock), or the report gives no probe time to tell. A failure seen in
 * the report may be a probe made before the cluster settled or the path was fixed (Cilium publishes its results
 * up to a round later): the next probe says.
 */
export function failureConfirmed(u: Unreachable, firstSeenMs: number | undefined): boolean {
  if (!u.lastProbed) return true;
  const at = Date.parse(u.lastProbed);
  return firstSeenMs !== undefined && Number.isFinite(at) && at > firstSeenMs + CLOCK_MARGIN_MS;
}
