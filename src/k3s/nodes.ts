// Pure: Nodes as `kubectl get nodes -o json` shows them, reduced to what verify judges (Ready, EtcdIsVoter).
interface Condition {
  status: string;
  reason?: string;
  message?: string;
}

export interface NodeSeen {
  name: string;
  ready?: Condition;
  /** k3s's own condition on servers: True when the node's etcd member is a voter. */
  etcdVoter?: Condition;
}

export function parseNodes(json: string): NodeSeen[] {
  const items = (JSON.parse(json).items ?? []) as any[];
  const cond = (n: any, type: string): Condition | undefined => {
    const c = (n.status?.conditions ?? []).find((x: any) => x.type === type);
    return c ? { status: c.status, reason: c.reason, message: c.message } : undefined;
  };
  return items.map((n) => ({ name: n.metadata?.name, ready: cond(n, 'Ready'), etcdVoter: cond(n, 'EtcdIsVoter') }));
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
