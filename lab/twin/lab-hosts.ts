// Installing and driving the twin on lab hosts the way an operator does by hand: over SSH as ops with
// sudo, a k3s.service like install.sh writes, config.yaml, systemctl and journalctl.
import { readFileSync } from 'node:fs';
import { ssh, type RunResult } from '../api.ts';

/** The unit install.sh writes for a server (k3s install.sh create_systemd_service_file). */
const K3S_UNIT = `[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s server
`;

export async function sudo(host: string, cmd: string, input?: string, allowFail = false): Promise<RunResult> {
  return ssh(host, `sudo -n sh -c ${JSON.stringify(cmd).replace(/\$/g, '\\$')}`, { input, allowFail, timeoutMs: 180_000 });
}

/** Copies the twin to /usr/local/bin/k3s and writes the unit (not started). */
export async function installOnHost(host: string, k3sPath: string): Promise<void> {
  await sudo(
    host,
    'cat > /usr/local/bin/k3s.new && chmod 755 /usr/local/bin/k3s.new && mv /usr/local/bin/k3s.new /usr/local/bin/k3s',
    readFileSync(k3sPath, 'utf8'),
  );
  await sudo(host, 'cat > /etc/systemd/system/k3s.service && systemctl daemon-reload', K3S_UNIT);
}

export async function writeConfig(host: string, yaml: string): Promise<void> {
  await sudo(host, 'mkdir -p /etc/rancher/k3s && umask 077 && cat > /etc/rancher/k3s/config.yaml', yaml);
}

/** Stops k3s, kills a leftover etcd (KillMode=process), and removes every trace of a previous cluster. */
export async function resetHost(host: string): Promise<void> {
  await sudo(
    host,
    'systemctl stop k3s 2>/dev/null; systemctl reset-failed k3s 2>/dev/null; pkill -x etcd; sleep 0.5; rm -rf /var/lib/rancher/k3s /etc/rancher/k3s /etc/cni/net.d; journalctl --rotate >/dev/null 2>&1; journalctl --vacuum-time=1s >/dev/null 2>&1; true',
    undefined,
    true,
  );
}

/** `systemctl start k3s` returns once the unit reported READY=1 (Type=notify), or fails. */
export async function startK3s(host: string, noBlock = false): Promise<RunResult> {
  return sudo(host, `systemctl start ${noBlock ? '--no-block ' : ''}k3s`, undefined, true);
}

/** The host's clock in seconds, to read the journal from a point on. */
export async function hostNow(host: string): Promise<number> {
  return Number((await sudo(host, 'date +%s')).stdout.trim());
}

/** k3s's journal (message texts only), optionally since a host time in seconds. */
export async function journal(host: string, since?: number): Promise<string> {
  return (await sudo(host, `journalctl -u k3s --no-pager -o cat${since ? ` --since @${since}` : ''}`, undefined, true)).stdout;
}

/** Stops k3s and wipes its state, keeping the binary and the unit. */
export async function stopAndWipe(host: string): Promise<void> {
  await sudo(
    host,
    'systemctl stop k3s; systemctl reset-failed k3s 2>/dev/null; pkill -x etcd; sleep 0.3; rm -rf /var/lib/rancher/k3s /etc/rancher/k3s/k3s.yaml; true',
    undefined,
    true,
  );
}
