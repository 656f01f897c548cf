// Driving `bootstrap lab` as an operator would (the real executable), and resetting the lab hosts to
// "k3s never installed" between tests without rebuilding them.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostExec, hosts, paths } from '../../lab/api.ts';
import { NET } from '../../lab/config.ts';
import { repoRoot } from './cli.ts';
import { secretLeaks } from './secret-scan.ts';

export interface BootstrapRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** With --json: the events, parsed. */
  events: any[];
}

/** A fresh state folder (token, kubeconfig, journal) for one test file's environment. */
/** The first cause a run stopped with (its `stopped` event's error), as `--json` reports it. */
export const stopOf = (r: { events: any[] }) => r.events.find((e) => e.type === 'stopped')?.error;

/** Every cause a run stopped with. */
export const stopsOf = (r: { events: any[] }) => r.events.filter((e) => e.type === 'stopped').map((e) => e.error);

export function freshStateDir(): string {
  return mkdtempSync(join(tmpdir(), 'bootstrap-state-'));
}

export function bootstrap(
  args: string[],
  opts: { stateDir: string; inventory?: string; onEvent?: (e: any, child: ReturnType<typeof spawn>) => void; timeoutMs?: number },
): Promise<BootstrapRun> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/bootstrap.js'), 'lab', '--inventory', opts.inventory ?? paths.inventory, ...args], {
      cwd: repoRoot,
      env: { ...process.env, BOOTSTRAP_STATE_DIR: opts.stateDir, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    const events: any[] = [];
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      pending += d;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!args.includes('--json') || !line.startsWith('{')) continue;
        const e = JSON.parse(line);
        events.push(e);
        opts.onEvent?.(e, child);
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 900_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const run = { code, stdout, stderr, ms: Date.now() - t0, events };
      // No run may leak a secret, whatever the test checks (the token, the client key, the deploy key).
      let leaks: string[];
      try {
        leaks = secretLeaks(run, opts.stateDir, opts.inventory ?? paths.inventory);
      } catch (err) {
        reject(err); // an unreadable state folder fails the test instead of hanging it
        return;
      }
      if (leaks.length) reject(new Error(`the run leaked secrets:\n${leaks.join('\n')}`));
      else resolve(run);
    });
  });
}

/** Every lab host back to "k3s never installed" (what a cold build starts from). */
export async function resetCluster(): Promise<void> {
  await Promise.all(
    hosts().map((h) =>
      hostExec(
        h.name,
        [
          'systemctl stop k3s.service k3s-agent.service 2>/dev/null',
          'systemctl disable k3s.service k3s-agent.service 2>/dev/null',
          'pkill -9 -x etcd 2>/dev/null; pkill -9 -f /usr/local/bin/k3s 2>/dev/null',
          // The pods' containers outlive k3s (KillMode=process), each in its own scope under kubepods.slice:
          // stopping the slice kills them and removes their cgroups; a shim outside it is killed by its path.
          'systemctl stop kubepods.slice 2>/dev/null',
          "pkill -9 -f '/var/lib/rancher/k3s/data/[^/]*/bin/containerd-shim' 2>/dev/null",
          'rm -rf /var/lib/rancher/k3s /run/k3s /var/lib/kubelet /etc/rancher /usr/local/bin/k3s /etc/systemd/system/k3s.service /etc/systemd/system/k3s.service.env /etc/systemd/system/k3s-agent.service /etc/systemd/system/k3s-agent.service.env /etc/sysctl.d/90-k3s.conf /etc/modules-load.d/k3s.conf /run/lock/bootstrap.lock',
          // kube-vip's address stays on a NIC when its process is killed: a cold build starts without it.
          `for d in $(ls /sys/class/net); do ip addr del ${NET.vip}/32 dev $d 2>/dev/null; done`,
          'rm -f /etc/cni/net.d/05-cilium.conflist',
          'systemctl daemon-reload; systemctl reset-failed 2>/dev/null; true',
        ].join('; '),
      ),
    ),
  );
}

/** Each server's EtcdIsVoter status as the founder's API reports it (agents have no such condition and are left out). */
export async function voters(founder = hosts()[0].name): Promise<Record<string, string>> {
  const res = await hostExec(
    founder,
    `k3s kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="EtcdIsVoter")].status}{"\\n"}{end}'`,
  );
  return Object.fromEntries(
    res.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('='))
      .filter(([, status]) => status),
  );
}

/** A fingerprint of what the engine would touch on a host: for "check mode changed nothing". */
export async function hostFingerprint(name: string): Promise<string> {
  const res = await hostExec(
    name,
    'hostname; ls -la --time-style=+%s /etc/rancher /usr/local/bin /etc/sysctl.d /etc/modules-load.d /etc/systemd/system 2>&1; cat /etc/hostname; sha256sum /etc/rancher/k3s/config.yaml 2>&1; systemctl is-active k3s.service; true',
  );
  return res.stdout;
}

/**
 * What of k3s is left on a host after it was removed or reset: any k3s or containerd-shim process, its unit
 * files, data, config and binary, and the state of both services. A clean host answers `['inactive', 'inactive']`.
 */
export async function k3sLeftOn(name: string): Promise<string[]> {
  const res = await hostExec(
    name,
    'pgrep -f /usr/local/bin/k3s; pgrep -f containerd-shim; ls /etc/systemd/system/k3s.service /etc/systemd/system/k3s-agent.service /var/lib/rancher/k3s /etc/rancher/k3s /usr/local/bin/k3s 2>/dev/null; systemctl is-active k3s k3s-agent; true',
  );
  return res.stdout.trim().split('\n');
}
