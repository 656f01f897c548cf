// READY=1 for Type=notify units. Node cannot send unix datagrams, so the twin runs systemd-notify, which
// by default reports with its parent's pid (our main pid) as sender credentials — accepted by systemd's
// default NotifyAccess=main because systemd-notify runs as root. Outside systemd (no NOTIFY_SOCKET) it is a no-op.
import { spawnSync } from 'node:child_process';

export function notifyReady(status = 'k3s is up and running'): void {
  if (!process.env.NOTIFY_SOCKET) return;
  spawnSync('systemd-notify', ['--ready', `--status=${status}`], { stdio: 'ignore' });
}
