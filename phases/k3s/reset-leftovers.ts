// What k3s and the add-ons it ran leave on a host, and the commands that take each away: the read-only
// probe lists what is there (pure parsing here), the reset's host step (reset-phase.ts hostStep) plans from it.
//
// Where each comes from, upstream:
// - k3s's own uninstall (k3s-io/k3s install.sh at commit 0136cf2, create_uninstall and create_killall): the
//   killall (src/k3s/killall.ts), `systemctl disable` and the unit and env files, the kubectl/crictl/ctr
//   links to k3s in the binary's folder, /etc/rancher/k3s, /run/k3s, /run/flannel, the data dir,
//   /var/lib/kubelet, /var/lib/cni and the binary. Its killall runs iptables-save | iptables-restore with the
//   k3s data dir's bin and bin/aux folders on the PATH (k3s bundles iptables there): a host without
//   iptables of its own still gets its rules cleaned, so the rules go BEFORE the data dir does.
// - Cilium's own cleanup (cilium/cilium at commit 797ab26, cilium-dbg/cmd/cleanup.go): its links (the prefix
//   `cilium_`: cilium_host, cilium_net, cilium_vxlan, cilium_geneve…; the pods' `lxc` veths), the tc filters
//   it attached to other links (names with bpf_netdev, bpf_host, bpf_lxc, bpf_overlay, bpf_network, cil_ or
//   cilium; removed before the maps their tail calls use), its maps pinned in <bpffs>/tc/globals (names
//   starting `cilium_`), its other pins under <bpffs>/cilium (cilium/cilium at commit 0267401,
//   pkg/bpf/bpffs_linux.go CiliumPath), its runtime folder /var/run/cilium and library folder /var/lib/cilium
//   (pkg/defaults RuntimePath, LibraryPath; the latter is the container's, gone from a host unless Cilium ran
//   on it outside one), its CNI configurations in /etc/cni/net.d (05-cilium.conflist and older names; other
//   CNIs' files it renamed *.cilium_bak are renamed back). The 1.19.5 chart (install/kubernetes/cilium,
//   values.yaml and templates/cilium-agent/daemonset.yaml) mounts exactly these from the host: bpf.root
//   /sys/fs/bpf, daemon.runPath /var/run/cilium, cni.confPath /etc/cni/net.d, and cni.binPath /opt/cni/bin,
//   where its install-cni-binaries init container puts cilium-cni.
//   Its iptables rules are the CILIUM_* chains and the rules that jump to them, each with "cilium" in it:
//   every line with "cilium" (any case) goes, as k3s's documentation for Cilium says (k3s-io/docs at commit
//   72100bc, docs/networking/basic-network-options.md, Custom CNI, Cilium: `iptables-save | grep -iv cilium |
//   iptables-restore`, and the same for ip6tables).
//
// Differences from k3s's uninstall: /etc/rancher/node (the node password) goes too (a host rejoining
// another cluster must not present this one's password); the links bootstrap never makes are not looked
// for beyond kubectl/crictl/ctr; nothing of the SELinux packages (Debian has none).
// Differences from Cilium's cleanup: its XDP programs are not looked for (attached only with
// loadBalancer.acceleration, off in the 1.19.5 chart's defaults, which the GitOps fixture's values keep), nor
// its socket-LB programs on the cgroup root other than through their pins, nor routes other than those that
// go with its links.
// And this tool's own folder on the host (src/engine/sum-stamps.ts HOST_STATE_DIR: the sums of the files it
// uploaded, which go with them).
// Left on purpose: what node-baseline wrote for the host (its hostname and /etc/hosts line,
// /etc/sysctl.d/90-k3s.conf, /etc/modules-load.d/k3s.conf: the host's preparation, which a rebuild writes
// the same), the operator's user, SSH keys, packages, and kubelet's logs under /var/log.
import { DATA_DIR, K3S_BIN, roleOf, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { K3S_STATE, killallCommand, SHIMS_PROBE } from '../../src/k3s/killall.ts';
import type { ProbeCommand, ProbeResults } from '../../src/engine/phase.ts';
import { HOST_STATE_DIR } from '../../src/engine/sum-stamps.ts';

/** The role units: a host may hold either (a server demoted by hand): both are looked for. */
const UNITS = [SERVER_ROLE, roleOf({ role: 'agent' })];
const BIN_DIR = '/usr/local/bin';
/** k3s's files on a host: its state (K3S_STATE), its configuration, the units and their env files, the binary. */
const K3S_FILES = [...K3S_STATE, '/etc/rancher/k3s', '/run/flannel', ...UNITS.flatMap((u) => [u.unitFile, u.envFile]), K3S_BIN];
/** The links k3s's installer makes beside its binary (removed only when they point at k3s). */
const K3S_LINKS = ['kubectl', 'crictl', 'ctr'].map((c) => `${BIN_DIR}/${c}`);

/** The bpffs folder Cilium pins its objects in, and its legacy map folder (cilium/cilium pkg/defaults). */
const BPFFS_CILIUM = '/sys/fs/bpf/cilium';
const BPFFS_MAPS = '/sys/fs/bpf/tc/globals';
const CNI_CONF_DIR = '/etc/cni/net.d';
const CNI_BIN = '/opt/cni/bin/cilium-cni';
/** Cilium's runtime and library folders on the host (RuntimePath and LibraryPath). */
const CILIUM_DIRS = ['/var/run/cilium', '/var/lib/cilium'];

/** Where iptables may be: the PATH (with root's sbin folders) and, after it, what k3s bundles in its data dir. */
const XTABLES_PATH = `p=$PATH:/usr/sbin:/sbin; for d in ${DATA_DIR}/data/*/bin; do p=$p:$d:$d/aux; done`;

const exists = (paths: string[]) => `for p in ${paths.join(' ')}; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done; true`;

/** Every read-only probe of a host's leftovers. */
export function leftoverProbes(vip: string): Record<string, ProbeCommand> {
  return {
    units: {
      command: UNITS.map((u) => `echo "${u.unit} $(systemctl is-active ${u.unit} 2>/dev/null) $(systemctl is-enabled ${u.unit} 2>/dev/null)"`).join('; '),
    },
    shims: { command: SHIMS_PROBE },
    mounts: { command: `awk '$2 ~ "^(/run/k3s|/var/lib/kubelet|/run/netns/cni-|/run/cilium|/var/run/cilium)" { print $2 }' /proc/self/mounts` },
    netns: { command: `ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ { print $1 }'` },
    vip: { command: `ip -o -4 addr show | awk '$4 == "${vip}/32" { print $2 }'` },
    links: { command: `ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2) } $2 ~ /^(cilium_|lxc)/ { print $2 }'` },
    // The names of tc filters Cilium attached (cleanup.go getTCFilters).
    tc: {
      command: `for l in $(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2) } $2 !~ /^(cilium_|lxc)/ { print $2 }'); do for d in ingress egress; do tc filter show dev "$l" $d 2>/dev/null | awk -v l="$l" -v d="$d" '/ bpf / && /(bpf_netdev|bpf_network|bpf_host|bpf_lxc|bpf_overlay|cil_|cilium)/ { for (i = 1; i < NF; i++) if ($i == "pref") { j = i + 1; print l, d, $j } }'; done; done | sort -u`,
      sudo: true,
    },
    bpf: { command: `[ -e ${BPFFS_CILIUM} ] && echo ${BPFFS_CILIUM}; ls -d ${BPFFS_MAPS}/cilium_* 2>/dev/null; true`, sudo: true },
    iptables: { command: XTABLES_PROBE, sudo: true },
    cni: {
      command: `ls -d ${CNI_CONF_DIR}/*cilium* ${CNI_BIN} 2>/dev/null; true`,
      sudo: true,
    },
    ciliumDirs: { command: exists(CILIUM_DIRS), sudo: true },
    files: { command: exists(K3S_FILES), sudo: true },
    ownState: { command: exists([HOST_STATE_DIR]), sudo: true },
    k3sLinks: {
      command: `for l in ${K3S_LINKS.join(' ')}; do [ -L "$l" ] && [ "$(readlink "$l")" = k3s -o "$(readlink "$l")" = ${K3S_BIN} ] && echo "$l"; done; true`,
    },
  };
}

/**
 * Which iptables there is, each family once (legacy and nft both when both exist; the plain iptables-save
 * when neither variant does): `xtables <save> <lines with cilium>`; and `nft <path>` when nft is there.
 * The optional programs are called by the path `command -v` found (only ever run when present).
 */
const XTABLES_PROBE = [
  XTABLES_PATH,
  'found=',
  'for t in iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft; do s=$(PATH=$p command -v $t-save) || continue; found=1; echo "xtables $s $("$s" 2>/dev/null | grep -ci cilium)"; done',
  '[ -n "$found" ] || for t in iptables ip6tables; do s=$(PATH=$p command -v $t-save) && echo "xtables $s $("$s" 2>/dev/null | grep -ci cilium)"; done',
  'for t in nft; do n=$(PATH=$p command -v $t) && echo "nft $n" && "$n" list tables 2>/dev/null | while read -r _ fam name; do [ "$fam" = ip ] || [ "$fam" = ip6 ] || continue; "$n" -a list table $fam $name | awk -v t="$fam $name" \'/^\\tchain / { c = $2; if (c ~ /^CILIUM_/) print "nftchain", t, c; next } c !~ /^CILIUM_/ && tolower($0) ~ /cilium/ && / # handle / { print "nftrule", t, c, $NF }\'; done; done',
  'true',
].join('; ');

/** What a host holds of k3s and Cilium, read from leftoverProbes. */
export interface Leftovers {
  /** Units active, and those enabled (to disable). */
  active: string[];
  enabled: string[];
  shims: number;
  mounts: string[];
  netns: string[];
  /** NICs holding the VIP. */
  vipOn: string[];
  links: string[];
  /** Cilium's tc filters on other links: `dev direction pref`. */
  tc: { dev: string; dir: string; pref: string }[];
  bpf: string[];
  /** iptables save programs and how many lines with "cilium" each shows. */
  xtables: { save: string; lines: number }[];
  /** nft, when there is no iptables: Cilium's chains and the rules that jump to them. */
  nft?: { path: string; chains: string[]; rules: string[] };
  cni: string[];
  ciliumDirs: string[];
  files: string[];
  k3sLinks: string[];
  /** This tool's own folder (HOST_STATE_DIR), when there. */
  ownState: string[];
}

const lines = (s: string | undefined) =>
  (s ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** Pure: the probes' output as data. */
export function readLeftovers(probe: ProbeResults): Leftovers {
  const units = lines(probe.units?.stdout).map((l) => l.split(/\s+/));
  const ipt = lines(probe.iptables?.stdout).map((l) => l.split(/\s+/));
  const nftPath = ipt.find((w) => w[0] === 'nft')?.[1];
  const xtables = ipt.filter((w) => w[0] === 'xtables').map((w) => ({ save: w[1], lines: Number(w[2]) || 0 }));
  return {
    active: units.filter((w) => ['active', 'activating', 'reloading', 'deactivating'].includes(w[1])).map((w) => w[0]),
    enabled: units.filter((w) => ['enabled', 'enabled-runtime'].includes(w[2])).map((w) => w[0]),
    shims: Number(probe.shims?.stdout.trim() || 0),
    mounts: lines(probe.mounts?.stdout),
    netns: lines(probe.netns?.stdout),
    vipOn: lines(probe.vip?.stdout),
    links: lines(probe.links?.stdout),
    tc: lines(probe.tc?.stdout).map((l) => {
      const [dev, dir, pref] = l.split(/\s+/);
      return { dev, dir, pref };
    }),
    bpf: lines(probe.bpf?.stdout),
    xtables,
    ...(nftPath && {
      nft: {
        path: nftPath,
        chains: ipt.filter((w) => w[0] === 'nftchain').map((w) => w.slice(1).join(' ')),
        rules: ipt.filter((w) => w[0] === 'nftrule').map((w) => w.slice(1).join(' ')),
      },
    }),
    cni: lines(probe.cni?.stdout),
    ciliumDirs: lines(probe.ciliumDirs?.stdout),
    files: lines(probe.files?.stdout),
    k3sLinks: lines(probe.k3sLinks?.stdout),
    ownState: lines(probe.ownState?.stdout),
  };
}

/** One removal: what it takes away (from the probe) and the command that does it (as root). */
export interface Removal {
  what: string;
  command: string;
}

/**
 * Pure: the removals a host needs, in the order they must run: k3s stopped first (nothing re-creates what
 * follows), Cilium's tc filters before its maps (cleanup.go: a filter whose tail-call maps are gone drops
 * packets), iptables before k3s's files (k3s's bundled iptables lives in its data dir), k3s's files last.
 * None when nothing is left: a second reset changes nothing.
 */
export function removals(left: Leftovers, opts: { vip: string; unit: string }): Removal[] {
  const out: Removal[] = [];
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  if (left.active.length || left.shims || left.mounts.length || left.netns.length) {
    const units = left.active.length ? left.active : [opts.unit];
    out.push({
      what: `stop ${units.join(', ')} and everything it started as k3s-killall.sh does (${plural(left.shims, 'container shim')} and their processes, ${plural(left.mounts.length, 'mount')}, ${plural(left.netns.length, 'CNI namespace')})`,
      command: units.map((u) => killallCommand(u, opts.vip)).join('; '),
    });
  }
  if (left.vipOn.length)
    out.push({
      what: `remove the control-plane VIP ${opts.vip} from ${left.vipOn.join(', ')}`,
      command: left.vipOn.map((nic) => `ip addr del ${opts.vip}/32 dev ${nic} 2>/dev/null`).join('; ') + '; true',
    });
  if (left.tc.length)
    out.push({
      what: `remove Cilium's tc filters from ${[...new Set(left.tc.map((f) => f.dev))].join(', ')} (${left.tc.map((f) => `${f.dev} ${f.dir} pref ${f.pref}`).join(', ')})`,
      command: left.tc.map((f) => `tc filter del dev ${f.dev} ${f.dir} pref ${f.pref} 2>/dev/null`).join('; ') + '; true',
    });
  if (left.links.length)
    out.push({
      what: `remove Cilium's links ${left.links.join(', ')}`,
      command: `for l in ${left.links.join(' ')}; do ip link delete "$l" 2>/dev/null; done; true`,
    });
  if (left.bpf.length) {
    const maps = left.bpf.filter((p) => p.startsWith(`${BPFFS_MAPS}/`));
    const dir = left.bpf.filter((p) => p === BPFFS_CILIUM);
    out.push({
      what: `remove Cilium's BPF pins: ${[...dir, ...(maps.length ? [`${plural(maps.length, 'map')} ${BPFFS_MAPS}/cilium_*`] : [])].join(', ')}`,
      command: `rm -rf ${BPFFS_CILIUM} ${BPFFS_MAPS}/cilium_*`,
    });
  }
  const withRules = left.xtables.filter((x) => x.lines > 0);
  if (withRules.length)
    out.push({
      what: `remove Cilium's iptables rules (its CILIUM_* chains and the jumps to them, every table): ${withRules.map((x) => `${plural(x.lines, 'line')} in ${x.save}`).join(', ')}`,
      command: withRules.map((x) => `${x.save} | grep -iv cilium | ${x.save.replace(/-save$/, '-restore')}`).join(' && '),
    });
  else if (!left.xtables.length && left.nft && (left.nft.rules.length || left.nft.chains.length)) {
    const n = left.nft.path;
    const rules = left.nft.rules.map((r) => {
      const [fam, table, chain, handle] = r.split(' ');
      return `${n} delete rule ${fam} ${table} ${chain} handle ${handle}`;
    });
    const flush = left.nft.chains.map((c) => `${n} flush chain ${c}`);
    const del = left.nft.chains.map((c) => `${n} delete chain ${c}`);
    out.push({
      what: `remove Cilium's iptables rules through nft (no iptables on the host): ${plural(left.nft.chains.length, 'chain')} ${left.nft.chains.map((c) => c.split(' ').reverse()[0]).join(', ')}, ${plural(left.nft.rules.length, 'jump')} to them`,
      command: [...rules, ...flush, ...del].join(' && '),
    });
  }
  if (left.cni.length)
    out.push({
      what: `remove Cilium's CNI configuration and binary: ${left.cni.filter((p) => !p.endsWith('.cilium_bak')).join(', ')}${left.cni.some((p) => p.endsWith('.cilium_bak')) ? ' (files it renamed *.cilium_bak get their names back)' : ''}`,
      command: `for f in ${CNI_CONF_DIR}/*.cilium_bak; do [ -e "$f" ] && mv "$f" "\${f%.cilium_bak}"; done; rm -f ${CNI_CONF_DIR}/*cilium* ${CNI_BIN}`,
    });
  if (left.ciliumDirs.length)
    out.push({
      what: `remove Cilium's runtime state: ${left.ciliumDirs.join(', ')}`,
      command: `for m in $(awk '$2 ~ "^(/run/cilium|/var/run/cilium)" { print $2 }' /proc/self/mounts | sort -r); do umount -f "$m"; done; rm -rf ${CILIUM_DIRS.join(' ')}`,
    });
  if (left.files.length || left.enabled.length || left.k3sLinks.length)
    out.push({
      what: `remove k3s's files: ${[...left.files, ...left.k3sLinks].join(', ') || 'none'}${left.enabled.length ? `; ${left.enabled.join(', ')} disabled` : ''}`,
      command: [
        ...(left.enabled.length ? [`systemctl disable ${left.enabled.join(' ')} 2>/dev/null`] : []),
        `rm -rf ${K3S_FILES.join(' ')}`,
        ...(left.k3sLinks.length ? [`rm -f ${left.k3sLinks.join(' ')}`] : []),
        // /etc/rancher was made for k3s's folders: gone when nothing else is in it.
        `rmdir /etc/rancher 2>/dev/null`,
        `systemctl daemon-reload`,
        `systemctl reset-failed ${UNITS.map((u) => u.unit).join(' ')} 2>/dev/null`,
        'true',
      ].join('; '),
    });
  if (left.ownState.length)
    out.push({
      what: `remove bootstrap's own state on the host: ${HOST_STATE_DIR} (the sums of the files it uploaded)`,
      command: `rm -rf ${HOST_STATE_DIR}`,
    });
  return out;
}

/** What the plan says when there is no iptables and no nft: nothing to clean, and why. */
export function iptablesNote(left: Leftovers): string | undefined {
  if (left.xtables.length || left.nft) return undefined;
  return "no iptables (neither the host's nor k3s's bundled one) and no nft on the host: no iptables rules to clean";
}
