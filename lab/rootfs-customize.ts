// What the cached root filesystem gets on top of debootstrap, as one shell script run in a chroot.
// Everything per host (hostname, machine-id, host keys, authorized_keys) is added at boot instead.
import { OPS_USER } from './config.ts';
import { LAB_TOOLS, LAB_TOOLS_DIR } from './twin/tools.ts';

/**
 * Binaries of packages the root filesystem installs for the twins (iputils-arping for the kube-vip twin's
 * gratuitous ARP, openssl for the k3s twin's certificates, kubernetes-client for `k3s kubectl`) that a stock
 * Debian 12 server does not have: moved off the PATH into the twins' folder. c_rehash (openssl's Perl
 * helper) is removed.
 */
const MOVED_OFF_PATH = ['/usr/bin/arping', '/usr/bin/openssl', '/usr/bin/kubectl'];
/** git's helpers and templates, mounted from the machine beside its git (host.ts privateMounts). */
export const GIT_DIRS = ['/usr/lib/git-core', '/usr/share/git-core'];

/** Where clock-skew puts libfaketime's preload and offset (tmpfs: a reboot heals the skew). */
export const FAKETIME_RUN = '/run/lab-faketime';
/** The one shared-memory segment (semaphore, counter) every skewed process attaches to. */
export const FAKETIME_SEM = '/faketime_sem_lab';
export const FAKETIME_SHM = '/faketime_shm_lab';
export const FAKETIME_SHARED = `${FAKETIME_SEM} ${FAKETIME_SHM}`;

/**
 * Units that cannot work in a network/PID namespace without devices of their own; masked so the host
 * does not report them as failed.
 */
const MASKED_UNITS = [
  'systemd-udevd.service',
  'systemd-udevd-control.socket',
  'systemd-udevd-kernel.socket',
  'systemd-udev-trigger.service',
  'systemd-udev-settle.service',
  'getty@.service',
  'serial-getty@.service',
  'console-getty.service',
  'container-getty@.service',
  'getty-static.service',
  'systemd-networkd.service',
  'systemd-networkd.socket',
  'systemd-networkd-wait-online.service',
  'sys-kernel-debug.mount',
  'sys-kernel-tracing.mount',
  'sys-kernel-config.mount',
  'sys-fs-fuse-connections.mount',
  'proc-sys-fs-binfmt_misc.automount',
  'proc-sys-fs-binfmt_misc.mount',
  'dev-hugepages.mount',
  'systemd-modules-load.service',
];

export function customizeScript(): string {
  return `set -eu
export DEBIAN_FRONTEND=noninteractive
# Host keys are made per host at boot; the ones the package install generated would be shared.
rm -f /etc/ssh/ssh_host_*
cat > /etc/ssh/sshd_config.d/lab.conf <<'X'
HostKey /etc/ssh/ssh_host_ed25519_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UseDNS no
X
id ${OPS_USER} >/dev/null 2>&1 || useradd -m -s /bin/bash ${OPS_USER}
usermod -p '*' ${OPS_USER}
install -d -m 700 -o ${OPS_USER} -g ${OPS_USER} /home/${OPS_USER}/.ssh
cat > /etc/sudoers.d/${OPS_USER} <<'X'
${OPS_USER} ALL=(ALL) NOPASSWD:ALL
Defaults env_keep += "FAKETIME_DONT_FAKE_MONOTONIC FAKETIME_SHARED NO_FAKE_STAT"
X
chmod 0440 /etc/sudoers.d/${OPS_USER}
# clock-skew: libfaketime preloaded into every new process while /run/lab-faketime holds its files
# (so a reboot, which empties /run, heals it and PID 1 never loads it). Every process gets the same
# two settings from every door (SSH sessions via pam_env, services via systemd, commands under sudo):
# monotonic clocks stay real, and libfaketime attaches to one shared-memory segment the fault makes
# instead of creating one per process, whose removal at exit sshd's seccomp sandbox punishes (SIGSYS).
# File times stay real (NO_FAKE_STAT): libfaketime takes that segment's semaphore around every stat(),
# and a process that dies inside (SIGPIPE, a kill) leaves every later one on the host waiting forever.
echo FAKETIME_DONT_FAKE_MONOTONIC=1 >> /etc/environment
echo NO_FAKE_STAT=1 >> /etc/environment
echo 'FAKETIME_SHARED="${FAKETIME_SHARED}"' >> /etc/environment
echo LANG=C.UTF-8 > /etc/default/locale
mkdir -p /etc/systemd/system.conf.d
printf '[Manager]\\nDefaultEnvironment=FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 "FAKETIME_SHARED=${FAKETIME_SHARED}"\\n' > /etc/systemd/system.conf.d/lab.conf
ln -sfn ${FAKETIME_RUN}/ld.so.preload /etc/ld.so.preload
ln -sfn ${FAKETIME_RUN}/faketimerc /etc/faketimerc
systemctl mask ${MASKED_UNITS.join(' ')} >/dev/null 2>&1
# No DNS in the lab: names come from /etc/hosts (written per host).
printf '# the lab has no DNS; lab hosts are in /etc/hosts\\n' > /etc/resolv.conf
rm -f /etc/machine-id /var/lib/dbus/machine-id /etc/hostname
: > /etc/machine-id
mkdir -p /var/lib/rancher ${GIT_DIRS.join(' ')}
# The twins' own programs, off every PATH (lab/twin/tools.ts): moved here from their packages, or mount
# points for the machine's copies (host.ts).
install -d -m 755 ${LAB_TOOLS_DIR}
${MOVED_OFF_PATH.map((p) => `mv ${p} ${LAB_TOOLS_DIR}/`).join('\n')}
rm -f /usr/bin/c_rehash
for t in ${LAB_TOOLS.join(' ')}; do [ -e ${LAB_TOOLS_DIR}/$t ] || touch ${LAB_TOOLS_DIR}/$t; done
apt-get clean
rm -rf /var/lib/apt/lists/*
`;
}
