// Every fault kind: inject it, see its effect from another host or the operator side, heal it, see
// the recovery. Disruptive faults hit k3s-lab-2 and k3s-lab-3 and are always healed, so the shared
// lab is whole again when each test ends.
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { fault, hostExec, status, wipe } from '../../lab/api.ts';
import { tcpOpen } from '../../lab/operator.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, holdLab, paths, ssh } from '../support/lab.ts';
import { readFileSync } from 'node:fs';
import { LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';
import { NET } from '../../lab/config.ts';

const PEER = 'k3s-lab-1';
// this lab instance's addresses (lab/config.ts), never another lab's
const A = { name: 'k3s-lab-2', address: `${NET.base}${NET.firstHost + 1}` };
const B = { name: 'k3s-lab-3', address: `${NET.base}${NET.firstHost + 2}` };
const PEER_ADDRESS = `${NET.base}${NET.firstHost}`;

/** From the peer: does `address` answer ARP? */
async function answersArp(address: string): Promise<boolean> {
  return (await ssh(PEER, `${LAB_TOOLS_DIR}/arping -c 2 -w 3 ${address} >/dev/null`, { allowFail: true })).code === 0;
}

/** From the peer: does `address` answer a ping within `seconds` (one echo a second until the first reply)? */
async function pingFromPeer(address: string, seconds = 2): Promise<boolean> {
  return (await ssh(PEER, `ping -c 1 -w ${seconds} ${address} >/dev/null`, { allowFail: true })).code === 0;
}

/** From the peer: connect to address:port, say what happened. */
async function connectFromPeer(address: string, port: number): Promise<string> {
  const res = await ssh(PEER, `timeout 4 bash -c 'exec 3<>/dev/tcp/${address}/${port}' 2>&1 && echo connected`, { allowFail: true });
  return res.stdout.trim();
}

describeAsRoot('lab faults', () => {
  beforeAll(async () => {
    await ensureLab();
  });

  let release: () => void = () => {};
  beforeEach(async () => {
    release = await holdLab();
  });

  // Whatever a failing test left behind, the next one finds a whole lab; then others may use it again.
  afterEach(async () => {
    try {
      for (const h of [A, B]) {
        for (const [kind, arg] of [
          ['start'],
          ['heal'],
          ['heal-peers'],
          ['unblock-port', '22'],
          ['unblock-egress', `${PEER_ADDRESS}:22`],
          ['free-disk'],
          ['clock-skew', '0'],
        ] as const) {
          await fault(h.name, kind, arg).catch(() => {});
        }
        const nic = (await status()).find((s) => s.name === h.name)?.nic;
        if (nic && nic !== 'eth0') await fault(h.name, 'rename-nic', 'eth0');
      }
    } finally {
      release();
    }
  });

  it('stop powers the host off (no ARP answer, no SSH) and start boots the same disk', async () => {
    await ssh(B.name, 'echo before-stop | sudo tee /var/lib/lab-disk-marker >/dev/null');
    const machineId = (await ssh(B.name, 'cat /etc/machine-id')).stdout;
    await fault(B.name, 'stop');
    expect(await answersArp(B.address)).toBe(false);
    expect(await tcpOpen(B.address, 22, 1000)).toBe(false);
    expect((await status()).find((s) => s.name === B.name)).toMatchObject({ running: false, systemd: '-' });

    await fault(B.name, 'start');
    expect(await answersArp(B.address)).toBe(true);
    expect((await ssh(B.name, 'cat /var/lib/lab-disk-marker /etc/machine-id')).stdout).toBe(`before-stop\n${machineId}`);
  });

  it('partition pulls the cable (peers and operator lose the host) and heal plugs it back', async () => {
    await fault(A.name, 'partition');
    expect(await pingFromPeer(A.address)).toBe(false);
    expect(await tcpOpen(A.address, 22, 1000)).toBe(false);
    expect((await hostExec(A.name, 'cat /sys/class/net/eth0/carrier', { allowFail: true })).stdout.trim()).not.toBe('1');

    await fault(A.name, 'heal');
    // A cable plugged back in carries traffic within moments, not necessarily the first echo.
    expect(await pingFromPeer(A.address, 5)).toBe(true);
    expect((await ssh(A.name, 'hostname')).stdout.trim()).toBe(A.name);
  });

  it('block-port makes the port refuse a peer (nftables in the host) and unblock-port opens it again', async () => {
    expect(await connectFromPeer(A.address, 22)).toBe('connected');
    await fault(A.name, 'block-port', '22');
    expect(await connectFromPeer(A.address, 22)).toMatch(/Connection refused/);
    expect(await pingFromPeer(A.address)).toBe(true); // only the port, not the host

    await fault(A.name, 'unblock-port', '22');
    expect(await connectFromPeer(A.address, 22)).toBe('connected');
  });

  it('cut-peers drops traffic between the host and the other hosts and the VIP, the operator still reaches it; heal-peers mends it', async () => {
    expect(await connectFromPeer(A.address, 22)).toBe('connected');
    await fault(A.name, 'cut-peers');
    // Dropped, not refused: the peer's connect waits until its own timeout gives up, with nothing said.
    expect(await connectFromPeer(A.address, 22)).not.toMatch(/connected|refused/);
    expect(await pingFromPeer(A.address)).toBe(false);
    // and from the host's side: neither a peer nor the VIP
    const out = await hostExec(
      A.name,
      `timeout 3 bash -c 'exec 3<>/dev/tcp/${B.address}/22' 2>&1 && echo connected; ping -c 1 -w 2 ${NET.vip} >/dev/null 2>&1 || echo no-vip`,
      { allowFail: true },
    );
    expect(out.stdout.trim()).toBe('no-vip');
    // the operator's side is not cut: SSH works
    expect((await ssh(A.name, 'hostname')).stdout.trim()).toBe(A.name);
    expect(await tcpOpen(A.address, 22, 1000)).toBe(true);

    await fault(A.name, 'heal-peers');
    expect(await connectFromPeer(A.address, 22)).toBe('connected');
    expect(await pingFromPeer(A.address, 5)).toBe(true);
  });

  it("block-egress cuts the host's way out to one address and port only, and unblock-egress opens it again", async () => {
    /** From the host itself: connect to address:port, say what happened. */
    const out = async (address: string) =>
      (await ssh(A.name, `timeout 4 bash -c 'exec 3<>/dev/tcp/${address}/22' 2>&1 && echo connected`, { allowFail: true })).stdout.trim();
    expect(await out(PEER_ADDRESS)).toBe('connected');
    await fault(A.name, 'block-egress', `${PEER_ADDRESS}:22`);
    expect(await out(PEER_ADDRESS)).toMatch(/Connection refused/);
    expect(await out(B.address)).toBe('connected'); // another address
    expect(await connectFromPeer(A.address, 22)).toBe('connected'); // towards the host: untouched

    await fault(A.name, 'unblock-egress', `${PEER_ADDRESS}:22`);
    expect(await out(PEER_ADDRESS)).toBe('connected');
  });

  it("clock-skew makes the host's SSH sessions, sudo and new services see a skewed clock; clock-skew 0 heals it", async () => {
    await fault(A.name, 'clock-skew', '3600');
    const [plain, underSudo] = (await ssh(A.name, 'date +%s; sudo -n sh -c "date +%s"')).stdout.trim().split('\n').map(Number);
    for (const seen of [plain!, underSudo!]) {
      expect(seen - Date.now() / 1000).toBeGreaterThan(3600 - 60);
      expect(seen - Date.now() / 1000).toBeLessThan(3600 + 60);
    }
    // services started from now on see it too
    // (systemd-run --wait would not do: sd-event's realtime timers reject a skewed clock)
    await ssh(A.name, 'sudo -n systemd-run -q -p StandardOutput=file:/run/lab-skew-probe date +%s');
    const fromService = await hostExec(A.name, 'for i in $(seq 50); do [ -s /run/lab-skew-probe ] && break; sleep 0.1; done; cat /run/lab-skew-probe');
    expect(Number(fromService.stdout) - Date.now() / 1000).toBeGreaterThan(3600 - 60);
    // monotonic clocks are not skewed: uptime stays what the machine says
    const uptime = Number((await ssh(A.name, 'cut -d" " -f1 /proc/uptime')).stdout);
    expect(Math.abs(uptime - Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]))).toBeLessThan(30);

    await fault(A.name, 'clock-skew', '0');
    const healed = (await ssh(A.name, 'date +%s; sudo -n date +%s')).stdout.trim().split('\n').map(Number);
    for (const seen of healed) expect(Math.abs(seen - Date.now() / 1000)).toBeLessThan(30);
  });

  it('fill-disk fills the filesystem under /var/lib/rancher; free-disk frees it', async () => {
    await fault(A.name, 'fill-disk');
    const full = await ssh(A.name, 'df -B1 --output=avail /var/lib/rancher | tail -1; echo x | sudo -n tee /var/lib/rancher/probe >/dev/null', {
      allowFail: true,
    });
    expect(Number(full.stdout.trim())).toBeLessThan(64 * 1024);
    expect(full.stderr).toMatch(/No space left on device/);
    // the rest of the host is not full
    expect((await ssh(A.name, 'echo ok > /tmp/lab-probe && cat /tmp/lab-probe')).stdout.trim()).toBe('ok');

    await fault(A.name, 'free-disk');
    const freed = await ssh(
      A.name,
      'echo x | sudo -n tee /var/lib/rancher/probe >/dev/null && sudo -n rm /var/lib/rancher/probe && df -B1 --output=avail /var/lib/rancher | tail -1',
    );
    expect(Number(freed.stdout.trim())).toBeGreaterThan(1024 * 1024 * 1024);
  });

  it("rename-nic renames the host's NIC; the address and routes stay, renaming back heals", async () => {
    await fault(A.name, 'rename-nic', 'ens5');
    const out = (await ssh(A.name, 'ls /sys/class/net; ip route show default')).stdout;
    expect(out).toContain('ens5');
    expect(out).not.toMatch(/^eth0$/m);
    expect(out).toContain(`default via ${NET.operator} dev ens5`);
    expect(await pingFromPeer(A.address)).toBe(true);

    await fault(A.name, 'rename-nic', 'eth0');
    expect((await ssh(A.name, 'ls /sys/class/net')).stdout.split('\n')).toContain('eth0');
  });

  it('wipe reinstalls a host: new host key in known_hosts, fresh disk, same address', async () => {
    const keyLine = () =>
      readFileSync(paths.knownHosts, 'utf8')
        .split('\n')
        .find((l) => l.startsWith(`${B.address} `));
    const before = keyLine();
    await ssh(B.name, 'echo old | sudo tee /var/lib/lab-disk-marker >/dev/null');
    await wipe(B.name);
    expect(keyLine()).toBeDefined();
    expect(keyLine()).not.toBe(before);
    const after = await ssh(B.name, 'hostname; test -e /var/lib/lab-disk-marker && echo marker || echo fresh');
    expect(after.stdout).toBe(`${B.name}\nfresh\n`);
  });
});
