// The kube-vip twin stopped while it is adding the VIP (its pod deleted the moment it won the lease) leaves
// no address behind: a lab case once found the VIP on a server whose kube-vip pod was gone.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { kubeVipProgram } from '../../lab/twin/addons/kube-vip/program.ts';
import { fileNet, type NetOps } from '../../lab/twin/addons/kube-vip/net.ts';

it('a stop during the VIP add waits for the add, then removes the VIP before it resolves', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kv-stop-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'addrs');
  const base = fileNet(file);
  let added!: () => void;
  let adding!: () => void;
  const addStarted = new Promise<void>((r) => (adding = r));
  const net: NetOps = {
    ...base,
    addAddress: async (cidr, ifName) => {
      adding();
      await new Promise<void>((r) => (added = r));
      await base.addAddress(cidr, ifName);
    },
  };
  const lines: string[] = [];
  const running = kubeVipProgram(net).start({
    ctx: { node: 'k3s-lab-1' } as any,
    pod: { metadata: { name: 'kube-vip-ds-x', namespace: 'kube-system', uid: 'u' }, spec: {} },
    container: {},
    // Without leader election the twin leads at once: the add is the first thing it does.
    env: { address: '10.0.0.100', vip_interface: 'eth0', cp_enable: 'true', vip_arp: 'false', vip_leaderelection: 'false' },
    log: (l) => lines.push(l),
    state: () => undefined,
  });
  await addStarted;
  const stopped = running.stop();
  added();
  // stop() resolves only once the address is gone: the shim exits right after it.
  await stopped;
  const left = existsSync(file) ? readFileSync(file, 'utf8') : '';
  expect(left).toBe('');
  expect(lines.some((l) => l.includes('deleted address'))).toBe(true);
});
