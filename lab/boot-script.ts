// The two small shell scripts that turn a prepared folder into a running host. Pure text, so what a
// host boots with can be read (and tested) without booting one.
import type { CgroupLayout } from './cgroups.ts';
import type { HostPlan } from './config.ts';

export interface BootFiles {
  hostDir: string;
  rootfs: string;
  /** cgroup.procs files (machine view) the host joins before its cgroup namespace is made. */
  cgroupProcs: string[];
  layout: CgroupLayout;
  opsUid: number;
  opsGid: number;
  /** What the twins need from the machine, bind-mounted read-only off the host's PATH (host.ts privateMounts). */
  mounts: PrivateMount[];
}

/** A file or folder of the machine mounted read-only at `target` in every host (the target exists in the root filesystem). */
export interface PrivateMount {
  source: string;
  target: string;
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs on the machine: join the host's cgroups, then enter its network namespace and new PID/mount/UTS/IPC/cgroup namespaces. */
export function outerScript(host: HostPlan, f: BootFiles): string {
  return `#!/bin/sh
# ${host.name}: power on.
set -e
for f in ${f.cgroupProcs.map(q).join(' ')}; do echo $$ > "$f"; done
exec ip netns exec ${q(host.netns)} unshare --pid --fork --mount --uts --ipc --cgroup --kill-child -- /bin/sh ${q(`${f.hostDir}/boot.sh`)}
`;
}

function systemdArgs(layout: CgroupLayout): string {
  // NOTE: in a container systemd reads these from its own command line, not the kernel's. They only
  // repeat the machine's layout; the host's systemd would otherwise mount cgroup2 without controllers.
  if (layout === 'unified') return 'systemd.unified_cgroup_hierarchy=1';
  if (layout === 'hybrid') return 'systemd.unified_cgroup_hierarchy=0';
  return 'systemd.unified_cgroup_hierarchy=0 systemd.legacy_systemd_cgroup_controller=1';
}

/** Runs as PID 1 of the new PID namespace: mount the host's disk and kernel filesystems, exec systemd. */
export function bootScript(host: HostPlan, f: BootFiles): string {
  const privateMounts = f.mounts.map((m) => `mount --bind -o ro ${q(m.source)} "$R"${q(m.target)}`).join('\n');
  return `#!/bin/sh
# ${host.name}: PID 1 until systemd takes over.
set -e
H=${q(f.hostDir)}
R="$H/root"
mount -t overlay overlay -o lowerdir=${q(f.rootfs)},upperdir="$H/upper",workdir="$H/work" "$R"
if [ ! -e "$H/seeded" ]; then
  # A fresh disk: this host's identity (written once, so later changes by the engine survive reboots).
  S="$H/seed"
  cp "$S/hostname" "$R/etc/hostname"
  cp "$S/machine-id" "$R/etc/machine-id"
  cp "$S/hosts" "$R/etc/hosts"
  install -m 600 "$S/ssh_host_ed25519_key" "$R/etc/ssh/ssh_host_ed25519_key"
  install -m 644 "$S/ssh_host_ed25519_key.pub" "$R/etc/ssh/ssh_host_ed25519_key.pub"
  install -d -m 700 -o ${f.opsUid} -g ${f.opsGid} "$R/home/ops/.ssh"
  install -m 600 -o ${f.opsUid} -g ${f.opsGid} "$S/authorized_keys" "$R/home/ops/.ssh/authorized_keys"
  touch "$H/seeded"
fi
# /var/lib/rancher is its own small filesystem so fill-disk fills it and nothing else.
mount -o loop "$H/rancher.img" "$R/var/lib/rancher"
# What the twins need and a stock host lacks, off every PATH (lab/twin/tools.ts).
${privateMounts}
mount -t proc proc "$R/proc"
mount -t sysfs -o ro sysfs "$R/sys"
mount -t tmpfs -o mode=755,size=8m,nosuid dev "$R/dev"
for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  n=\${d%%:*}; mm=\${d#*:}; mknod -m 666 "$R/dev/$n" c \${mm%:*} \${mm#*:}
done
mkdir "$R/dev/pts" "$R/dev/shm" "$R/dev/mqueue"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$R/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$R/dev/shm"
ln -s pts/ptmx "$R/dev/ptmx"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
mount -t tmpfs -o mode=755,nosuid,nodev run "$R/run"
exec chroot "$R" /usr/bin/env -i container=bootstrap-lab /lib/systemd/systemd --system ${systemdArgs(f.layout)}
`;
}
