// The k3s agent twin's client load balancer (lab/twin/agent-lb.ts): the --server URL as the default, the
// supervisor's servers once listed, the default only when every listed server failed to dial, and
// upstream's log lines (k3s-io/k3s pkg/agent/loadbalancer).
import { describe, expect, it } from 'vitest';
import { AgentLoadBalancer, urlAddress } from '../../lab/twin/agent-lb.ts';

const VIP = '10.77.0.9:6443';
const S = ['10.77.0.10:6443', '10.77.0.11:6443', '10.77.0.12:6443'];
const dialError = (msg: string) => Object.assign(new Error(msg), { dial: true });

function lb() {
  const lines: string[] = [];
  return { lb: new AgentLoadBalancer(VIP, { info: (m) => lines.push(m) }), lines };
}

describe('agent load balancer', () => {
  it('starts with the --server address as its default and dials only that', async () => {
    const { lb: b, lines } = lb();
    expect(lines).toEqual([`Updated load balancer k3s-agent-load-balancer default server: ${VIP}`]);
    expect(b.order()).toEqual([VIP]);
    const seen: string[] = [];
    expect(await b.dial(async (base) => (seen.push(base), 'ok'))).toBe('ok');
    expect(seen).toEqual([`https://${VIP}`]);
  });

  it('once the supervisor lists the servers, dials them and keeps the default as the last resort', async () => {
    const { lb: b, lines } = lb();
    expect(b.update(S)).toBe(true);
    expect(lines.slice(1)).toEqual([
      ...S.map((a) => `Adding server to load balancer k3s-agent-load-balancer: ${a}`),
      `Updated load balancer k3s-agent-load-balancer server addresses -> [${S.join(' ')}] [default: ${VIP}]`,
    ]);
    expect(b.update([...S].reverse())).toBe(false);
    expect(b.order()).toEqual([...S, VIP]);
  });

  it('a server that cannot be dialled is skipped, goes below the default, and the one that answered stays first', async () => {
    const { lb: b } = lb();
    b.update(S);
    const tried: string[] = [];
    const r = await b.dial(async (base) => {
      tried.push(base);
      if (base.endsWith(S[0]!)) throw dialError('dial tcp 10.77.0.10:6443: connect: connection refused');
      return base;
    });
    expect(r).toBe(`https://${S[1]}`);
    expect(tried).toEqual([`https://${S[0]}`, `https://${S[1]}`]);
    expect(b.order()).toEqual([S[1], S[2], VIP, S[0]]);
  });

  it('the default is dialled only when every listed server failed; the last dial error when all did', async () => {
    const { lb: b } = lb();
    b.update(S);
    const tried: string[] = [];
    await expect(
      b.dial(async (base) => {
        tried.push(base.slice('https://'.length));
        throw dialError(`dial tcp ${base.slice(8)}: connect: connection refused`);
      }),
    ).rejects.toThrow(`dial tcp ${VIP}: connect: connection refused`);
    expect(tried).toEqual([...S, VIP]);
  });

  it("an error after the connection was made is the call's own: no failover", async () => {
    const { lb: b } = lb();
    b.update(S);
    const tried: string[] = [];
    await expect(
      b.dial(async (base) => {
        tried.push(base);
        throw new Error('401 Unauthorized');
      }),
    ).rejects.toThrow('401 Unauthorized');
    expect(tried).toHaveLength(1);
  });

  it('a server the supervisor no longer lists is removed, as upstream logs it', () => {
    const { lb: b, lines } = lb();
    b.update(S);
    b.update(S.slice(0, 2));
    expect(lines).toContain(`Removing server from load balancer k3s-agent-load-balancer: ${S[2]}`);
    expect(b.order()).toEqual([S[0], S[1], VIP]);
  });

  it("the address of a server URL carries the scheme's port when none is given", () => {
    expect(urlAddress('https://10.77.0.9:6443')).toBe(VIP);
    expect(urlAddress('https://k3s.example')).toBe('k3s.example:443');
  });
});
