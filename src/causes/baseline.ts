import { defineCauses } from './define.ts';

// node-baseline: what a host must offer before k3s goes on it (phases/node-baseline/).
export const baselineCauses = defineCauses({
  TOOL_MISSING: {
    title: 'A program the engine runs on the host is not installed',
    meaning:
      "Every command the engine runs on a host uses programs of Debian 12's required and important packages, plus sudo (phases/node-baseline/tools.ts lists them); one of them is missing, so a later step would fail halfway.",
    remedy: 'Install the Debian package the evidence names (`sudo apt-get install <package>`), then rerun.',
  },
  K3S_VERSION_MISMATCH: {
    title: 'The k3s binary in k3s.artifacts is not the release k3s.version names',
    meaning:
      'The binary the engine would upload reports (or, built for another platform, carries) another k3s release than the inventory: the cluster would run a version nobody chose.',
    remedy:
      "Put the k3s binary of the release k3s.version names in k3s.artifacts (with its matching air-gap images), or set k3s.version to the binary's release, then rerun.",
  },
  ARCH_UNSUPPORTED: {
    title: "The host's CPU architecture does not match the k3s binary",
    meaning: 'The k3s binary in the artifacts folder is built for another architecture than the host reports (uname -m).',
    remedy: 'Put the k3s binary for the host architecture in k3s.artifacts (k3s for amd64, k3s-arm64 renamed to k3s for arm64).',
  },
  KERNEL_TOO_OLD: {
    title: 'The kernel is older than the CNI needs',
    meaning: "Cilium's eBPF datapath and kube-proxy replacement need a kernel at least as new as the minimum stated (5.10 by default).",
    remedy: 'Upgrade the kernel (Debian: a newer linux-image from backports) and reboot, then rerun.',
  },
  CGROUP_V2_MISSING: {
    title: '/sys/fs/cgroup is not a cgroup2 (unified) mount',
    meaning: "k3s on Kubernetes >= 1.35 refuses cgroup v1, and Cilium's cgroup.hostRoot must be a real cgroup2 mount (socket-LB breaks silently otherwise).",
    remedy: 'Boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1 on the kernel command line; the Debian 12 default) and reboot.',
  },
  BPFFS_MISSING: {
    title: 'The kernel has no BPF filesystem',
    meaning: 'bpf is not listed in /proc/filesystems, so Cilium cannot pin its maps.',
    remedy: 'Use a kernel built with CONFIG_BPF_SYSCALL (every Debian kernel is).',
  },
  MODULE_MISSING: {
    title: 'A kernel module k3s needs is neither loaded nor loadable',
    meaning: 'br_netfilter or overlay is not built in, not loaded, and modprobe cannot load it.',
    remedy:
      "The module named ships with the kernel's Debian package: reboot into the installed kernel (an upgraded kernel's modules replace the running one's), or reinstall the running kernel (`sudo apt-get install --reinstall linux-image-$(uname -r)`); `sudo modprobe <module>` must then load it. Rerun.",
  },
  CLOCK_SKEW: {
    title: "The host's clock is off from the operator's",
    meaning: 'More than 2 s of difference: k3s bootstrap allows about 3 s, then TLS fails with "certificate has expired or is not yet valid".',
    remedy: 'Enable time sync on the host (systemd-timesyncd or chrony) and wait until it has synchronised, then rerun.',
  },
  DUPLICATE_HOST_IDENTITY: {
    title: 'Two hosts share a machine-id or product_uuid (cloned machines)',
    meaning: 'Kubernetes and etcd identify nodes by these; clones confuse node registration and etcd membership.',
    remedy:
      'A shared /etc/machine-id: on the clone `sudo rm /etc/machine-id && sudo systemd-machine-id-setup`; a shared product_uuid: give the VMs distinct UUIDs in the hypervisor. Then rerun.',
  },
  PORT_IN_USE: {
    title: 'A port k3s needs is held by another program',
    meaning: '6443, 2379, 2380 or 10250 is listening and the listener is not this k3s.',
    remedy: 'Stop or reconfigure the program the evidence names so that it frees the port (`sudo ss -ltnp` shows who holds each), then rerun.',
  },
  DISK_LOW: {
    title: 'Too little free space under /var/lib/rancher',
    meaning: 'k3s, etcd and container images need room; etcd stops accepting writes when its disk is full.',
    remedy: 'Free space or grow the filesystem holding /var/lib/rancher, then rerun.',
  },
  NO_DEFAULT_ROUTE: {
    title: 'The host has no default route',
    meaning: 'k3s needs a default route to pick its node IP and for service routing, even air-gapped (a dummy route is enough).',
    remedy: 'Add a default route (the LAN gateway, or a dummy interface route on an air-gapped host), then rerun.',
  },
  NIC_NOT_FOUND: {
    title: "The host's inventory address is on no interface, or the named NIC does not exist",
    meaning: 'The address in the inventory must be configured on one of the host interfaces; controlPlane.interface, when set, must exist.',
    remedy: 'Fix the address in the inventory or on the host, or set controlPlane.interface to the NIC that exists (ip -br link).',
  },
});
