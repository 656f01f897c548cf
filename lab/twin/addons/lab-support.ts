// For lab tests of the add-on twins: put manifests into the servers' auto-deploy folder, read the API
// through `k3s kubectl` on a host, find who holds the VIP, and leave the hosts as a cold build expects
// (no VIP left on a NIC, no CNI config left behind).
import tls from 'node:tls';
import { hostExec } from '../../api.ts';
import { NET } from '../../config.ts';

const MANIFESTS = '/var/lib/rancher/k3s/server/manifests';
export const VIP = NET.vip;

export async function writeManifest(host: string, name: string, text: string): Promise<void> {
  await hostExec(host, `mkdir -p ${MANIFESTS} && cat > ${MANIFESTS}/${name}.tmp && mv ${MANIFESTS}/${name}.tmp ${MANIFESTS}/${name}`, { input: text });
}

/** Takes a manifest out of the auto-deploy folder: the server applies it no more (its objects stay). */
export async function removeManifest(host: string, name: string): Promise<void> {
  await hostExec(host, `rm -f ${MANIFESTS}/${name}`);
}

export async function kubectl(host: string, args: string, allowFail = false): Promise<string> {
  const r = await hostExec(host, `k3s kubectl ${args}`, { allowFail, timeoutMs: 120_000 });
  return r.stdout;
}

export async function kubectlJson(host: string, args: string): Promise<any> {
  return JSON.parse(await kubectl(host, `${args} -o json`));
}

/** Hosts whose eth0 carries the VIP now. */
export async function vipHolders(hostNames: string[], vip = VIP): Promise<string[]> {
  const out: string[] = [];
  for (const h of hostNames) {
    const r = await hostExec(h, 'ip -o -4 addr show', { allowFail: true });
    if (r.stdout.includes(` ${vip}/`)) out.push(h);
  }
  return out;
}

/** A TLS handshake to the VIP from the operator's side, verified against the cluster CA. */
export function tlsHandshake(host: string, port: number, ca: string, timeoutMs = 3000): Promise<{ ok: boolean; error?: string }> {
  return new Promise((resolve) => {
    const s = tls.connect({ host, port, ca: [ca], rejectUnauthorized: true, timeout: timeoutMs });
    const done = (r: { ok: boolean; error?: string }) => {
      s.destroy();
      resolve(r);
    };
    s.once('secureConnect', () => done({ ok: true }));
    s.once('timeout', () => done({ ok: false, error: 'timeout' }));
    s.once('error', (e) => done({ ok: false, error: e.message }));
  });
}

export async function clusterCA(host: string): Promise<string> {
  return (await hostExec(host, 'cat /var/lib/rancher/k3s/server/tls/server-ca.crt')).stdout;
}

export async function waitUntil<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 1000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The state a cold build starts from, for what the add-on twins leave on a host. */
export async function cleanAddonTraces(hostNames: string[]): Promise<void> {
  await Promise.all(
    hostNames.map((h) =>
      hostExec(
        h,
        `ip addr del ${VIP}/32 dev eth0 2>/dev/null; rm -f /etc/cni/net.d/05-cilium.conflist /var/run/cilium/cilium.sock; rm -rf /var/log/pods; true`,
        { allowFail: true },
      ),
    ),
  );
}
