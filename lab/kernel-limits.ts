// The kernel limits a lab host would have to itself on its own machine. Every lab host's processes run as
// root of the one kernel here, and some of the kernel's per-user limits count them together: each host's
// systemd, journald, logind and udev take inotify instances, and fs.inotify.max_user_instances (128 by default)
// is exhausted by about twenty hosts. Past it, a host boots degraded (its .path units failed, logind without its
// utmp watch: "Too many open files") and sshd may not answer within the boot's budget. A real host has 128 of
// its own, so the lab gives the machine 128 per host it boots. Raised only, never lowered; left as raised by
// `lab down` (a machine-wide setting another program may rely on by then).
import { readFileSync, writeFileSync } from 'node:fs';

const PER_HOST = { 'fs/inotify/max_user_instances': 128, 'fs/inotify/max_user_watches': 8_192 } as const;

/** Raises the per-user kernel limits to what `hosts` machines would have between them. */
export function ensureKernelLimits(hosts: number, root = '/proc/sys'): void {
  for (const [key, perHost] of Object.entries(PER_HOST)) {
    const path = `${root}/${key}`;
    const now = Number(readFileSync(path, 'utf8').trim());
    const want = perHost * hosts;
    if (now < want) writeFileSync(path, `${want}\n`);
  }
}
