// Pure: Nodes as `kubectl get nodes -o json` shows them, reduced to what verify judges (Ready, EtcdIsVoter).
interface Condition {
  status: string;
  reason?: string;
  message?: string;
  /** When the kubelet last reported it (Ready's lastHeartbeatTime). */
  heartbeat?: string;
}

export interface NodeSeen {
  name: string;
  ready?: Condition;
  /** k3s's own condition on servers: True when the node's etcd member is a voter. */
  etcdVoter?: Condition;
  /** A control-plane node (k3s labels its servers node-role.kubernetes.io/control-plane=true). */
  server: boolean;
}

export function parseNodes(json: string): NodeSeen[] {
  return nodesSeen(JSON.parse(json).items ?? []);
}

/**
 * The same from the Node objects themselves: as JSON (kubectl) or as @kubernetes/client-node's V1Node, which
 * has the same fields but a Date for each time; a time is shown as the API writes it (RFC 3339, in seconds).
 */
export function nodesSeen(items: readonly object[]): NodeSeen[] {
  const time = (t: unknown) => (t instanceof Date ? t.toISOString().replace(/\.000Z$/, 'Z') : String(t));
  const cond = (n: any, type: string): Condition | undefined => {
    const c = (n.status?.conditions ?? []).find((x: any) => x.type === type);
    return c ? { status: c.status, reason: c.reason, message: c.message, ...(c.lastHeartbeatTime && { heartbeat: time(c.lastHeartbeatTime) }) } : undefined;
  };
  return (items as any[]).map((n) => ({
    name: n.metadata?.name,
    ready: cond(n, 'Ready'),
    etcdVoter: cond(n, 'EtcdIsVoter'),
    server: n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] === 'true',
  }));
}

/** Each expected host's readiness, in the inventory's order: absent Nodes count as not Ready. */
export function readiness(nodes: NodeSeen[], hosts: string[]): { host: string; ok: boolean; detail: string }[] {
  return hosts.map((host) => {
    const n = nodes.find((x) => x.name === host);
    if (!n) return { host, ok: false, detail: 'no Node object: the node never registered' };
    if (n.ready?.status === 'True') return { host, ok: true, detail: 'Ready' };
    const why = n.ready
      ? `Ready=${n.ready.status}${n.ready.reason ? ` ${n.ready.reason}` : ''}${n.ready.message ? `: ${n.ready.message}` : ''}`
      : 'no Ready condition';
    return { host, ok: false, detail: why };
  });
}

/** The Nodes whose names are none of `hosts` (the inventory's servers and agents), in the API's order. */
export function notInInventory(nodes: NodeSeen[], hosts: string[]): NodeSeen[] {
  return nodes.filter((n) => !hosts.includes(n.name));
}

/** How verify names a Node the inventory does not list: its role, readiness and last report. */
export function describeStranger(n: NodeSeen): string {
  const ready = n.ready ? `Ready=${n.ready.status}` : 'no Ready condition';
  return `${n.server ? 'a server' : 'an agent'} Node not in the inventory (${ready}${n.ready?.heartbeat ? `, last report ${n.ready.heartbeat}` : ''})`;
}
