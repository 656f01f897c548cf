// The k3s agent's client load balancer (k3s-io/k3s pkg/agent/loadbalancer, `k3s-agent-load-balancer`): the
// agent's supervisor, kubelet and controller connections go through it, never straight to the `--server`
// URL. It starts with that URL as its DEFAULT server and no others; once the agent has its certificates it
// asks the supervisor for the apiserver addresses (GET /v1-k3s/apiservers: every server's advertise
// address and port, pkg/agent/config APIServers, pkg/server/handlers APIServers) and from then on dials
// those, keeping the default only as a last resort (STANDBY: tried only when every listed server failed,
// pkg/agent/loadbalancer/servers.go `setAddresses`, `getServers` sorted by state). A dial that fails goes on
// to the next server (`serverList.dialContext`) and marks the failed one FAILED, below the default.
// So a firewall between an agent and the VIP (its `--server`) does not cut its kubelet off once the agent
// runs: only what dials the VIP itself (the Cilium agent's k8sServiceHost) sees it.
// The twin picks the server per request inside `k3s agent` (no listener on 127.0.0.1:6444, no health checks,
// no state file under agent/etc, no state-transition lines): what the failover decides is upstream's.
import type { Logger } from './log.ts';

const SUPERVISOR_LB = 'k3s-agent-load-balancer';

/** Go's %v of a []string. */
const goList = (xs: string[]) => `[${xs.join(' ')}]`;

/** host:port of a server URL, with the scheme's port when none is given (loadbalancer.New). */
export function urlAddress(url: string): string {
  const u = new URL(url);
  return u.port ? u.host : `${u.host}:${u.protocol === 'http:' ? 80 : 443}`;
}

export class AgentLoadBalancer {
  private servers: { address: string; failed: boolean }[] = [];
  private active?: string;

  constructor(
    readonly defaultAddress: string,
    private log: Pick<Logger, 'info'>,
  ) {
    log.info(`Updated load balancer ${SUPERVISOR_LB} default server: ${defaultAddress}`);
  }

  /** The servers listed by the supervisor (the default is not among them unless it was listed). */
  addresses(): string[] {
    return this.servers.map((s) => s.address);
  }

  /**
   * The order a dial tries them in: the server that answered last, the other listed ones, the default
   * (when it is not listed), then those whose last dial failed.
   */
  order(): string[] {
    const listed = this.servers.filter((s) => !s.failed).map((s) => s.address);
    const failed = this.servers.filter((s) => s.failed).map((s) => s.address);
    const ok = this.active && listed.includes(this.active) ? [this.active, ...listed.filter((a) => a !== this.active)] : listed;
    return [...ok, ...(this.servers.some((s) => s.address === this.defaultAddress) ? [] : [this.defaultAddress]), ...failed];
  }

  /** The supervisor's list: servers added and removed as upstream logs them; false when nothing changed. */
  update(addresses: string[]): boolean {
    const next = [...new Set(addresses)];
    const cur = this.addresses();
    if (next.length === cur.length && next.every((a) => cur.includes(a))) return false;
    for (const a of next) if (!cur.includes(a) && a !== this.defaultAddress) this.log.info(`Adding server to load balancer ${SUPERVISOR_LB}: ${a}`);
    for (const a of cur) if (!next.includes(a) && a !== this.defaultAddress) this.log.info(`Removing server from load balancer ${SUPERVISOR_LB}: ${a}`);
    this.servers = next.map((address) => this.servers.find((s) => s.address === address) ?? { address, failed: false });
    this.log.info(`Updated load balancer ${SUPERVISOR_LB} server addresses -> ${goList(next)} [default: ${this.defaultAddress}]`);
    return true;
  }

  /**
   * Runs `call` against the servers in order (its argument: `https://<address>`) until one is reachable: an
   * error with `dial: true` (the connection was never made) fails over to the next; any other outcome, an
   * answer or an error after connecting, is the call's. When every server failed, the last error.
   */
  async dial<T>(call: (base: string) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const address of this.order()) {
      try {
        const r = await call(`https://${address}`);
        this.mark(address, false);
        this.active = address;
        return r;
      } catch (e) {
        if (!(e as { dial?: boolean })?.dial) {
          this.mark(address, false);
          throw e;
        }
        this.mark(address, true);
        last = e;
      }
    }
    throw last;
  }

  private mark(address: string, failed: boolean): void {
    const s = this.servers.find((x) => x.address === address);
    if (s) s.failed = failed;
  }
}
