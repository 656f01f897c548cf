// Pure verdicts from what node-baseline's probes saw. Each returns the causes it finds (none = ok).
import { CauseError } from '../../src/errors.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { roleOf } from '../../src/k3s/paths.ts';
import { linkNames } from '../../src/util/ip-link.ts';
import { toolStops } from './tools.ts';

const MIN_KERNEL = '5.10';
const MAX_CLOCK_SKEW_S = 2;
const MIN_FREE_BYTES = 2 * 1024 ** 3;

export interface BaselineInputs {
  host: HostRef;
  probe: ProbeResults;
  /** The k3s binary's architecture ('x86_64', 'aarch64', or 'any' for a script). */
  binaryArch: string;
  /**
   * The operator's clock (epoch seconds) when the probe's output came back; used only when the probe has
   * no window (the clock probe's batch records when it was sent and answered).
   */
  operatorNow: number;
  /** controlPlane.interface ('auto' or a NIC name). */
  vipInterface: string;
  minKernel?: string;
}

export function baselineStops(i: BaselineInputs): CauseError[] {
  // A missing tool first, and alone: what the other probes printed without it (no `ip`, no route) is no verdict.
  const tools = toolStops(i.host, i.probe.tools);
  if (tools.length) return tools;
  return [archStop, kernelStop, cgroupStop, bpfStop, moduleStops, clockStop, routeStop, nicStop, portStops, diskStop].flatMap((f) => f(i));
}

const stop = (id: ConstructorParameters<typeof CauseError>[0], i: BaselineInputs, command: string, seen: string, excerpt?: string) =>
  new CauseError(id, { host: i.host.name, evidence: { command, seen, excerpt } });

const out = (i: BaselineInputs, key: string) => (i.probe[key]?.stdout ?? '').trim();

function archStop(i: BaselineInputs): CauseError[] {
  const arch = out(i, 'arch');
  if (i.binaryArch === 'any' || normaliseArch(arch) === normaliseArch(i.binaryArch)) return [];
  return [stop('ARCH_UNSUPPORTED', i, 'uname -m', `host is ${arch}, the k3s binary is built for ${i.binaryArch}`)];
}

export function normaliseArch(a: string): string {
  return ({ amd64: 'x86_64', arm64: 'aarch64' } as Record<string, string>)[a] ?? a;
}

function kernelStop(i: BaselineInputs): CauseError[] {
  const release = out(i, 'kernel');
  const min = i.minKernel ?? MIN_KERNEL;
  if (compareVersions(release, min) >= 0) return [];
  return [stop('KERNEL_TOO_OLD', i, 'uname -r', `kernel ${release} is older than ${min}`)];
}

/** Compares the leading numeric parts of two kernel versions ("6.1.0-18-amd64" vs "5.10"). */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => (v.match(/^\d+(\.\d+)*/)?.[0] ?? '0').split('.').map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let k = 0; k < Math.max(x.length, y.length); k++) {
    const d = (x[k] ?? 0) - (y[k] ?? 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

function cgroupStop(i: BaselineInputs): CauseError[] {
  const fs = out(i, 'cgroupfs');
  if (fs === 'cgroup2fs') return [];
  return [stop('CGROUP_V2_MISSING', i, 'stat -fc %T /sys/fs/cgroup', `/sys/fs/cgroup is ${fs || 'unreadable'}, not cgroup2fs`)];
}

function bpfStop(i: BaselineInputs): CauseError[] {
  return out(i, 'bpf') === 'supported' ? [] : [stop('BPFFS_MISSING', i, 'grep bpf /proc/filesystems', 'the kernel lists no bpf filesystem')];
}

function moduleStops(i: BaselineInputs): CauseError[] {
  return (['br_netfilter', 'overlay'] as const)
    .filter((m) => out(i, m) === 'absent')
    .map((m) => stop('MODULE_MISSING', i, `modprobe -n ${m}`, `${m} is not built in, not loaded, and cannot be loaded`));
}

function clockStop(i: BaselineInputs): CauseError[] {
  const hostNow = Number(out(i, 'clock'));
  if (!Number.isFinite(hostNow)) return [stop('CLOCK_SKEW', i, 'date +%s.%N', `the host's clock could not be read (${out(i, 'clock')})`)];
  // The host read its clock at some moment between sending the batch and its answer (a slow batch or a
  // bastion hop makes that span long): only a host clock outside that span by more than the limit is skew.
  // Comparing with one end alone would count the batch's own duration as skew.
  const w = i.probe.clock?.window;
  const [from, to] = w ? [w.sentMs / 1000, w.answeredMs / 1000] : [i.operatorNow, i.operatorNow];
  const skew = hostNow < from ? hostNow - from : hostNow > to ? hostNow - to : 0;
  if (Math.abs(skew) <= MAX_CLOCK_SKEW_S) return [];
  return [
    stop(
      'CLOCK_SKEW',
      i,
      'date +%s.%N',
      `the host's clock is ${skew > 0 ? 'ahead of' : 'behind'} the operator's by ${Math.abs(skew).toFixed(1)} s (limit ${MAX_CLOCK_SKEW_S} s)`,
    ),
  ];
}

function routeStop(i: BaselineInputs): CauseError[] {
  return out(i, 'route') ? [] : [stop('NO_DEFAULT_ROUTE', i, 'ip -4 route show default', 'no IPv4 default route')];
}

/** The interface holding the host's inventory address, from `ip -o -4 addr show`. */
export function nicOfAddress(addrs: string, address: string): string | undefined {
  for (const line of addrs.split('\n')) {
    const m = line.match(/^\d+:\s+(\S+)\s+inet\s+([\d.]+)\//);
    if (m && m[2] === address) return m[1].replace(/@.*$/, '');
  }
  return undefined;
}

function nicStop(i: BaselineInputs): CauseError[] {
  const stops: CauseError[] = [];
  if (!nicOfAddress(out(i, 'addrs'), i.host.address)) {
    stops.push(stop('NIC_NOT_FOUND', i, 'ip -o -4 addr show', `no interface holds ${i.host.address}`, out(i, 'addrs')));
  }
  // kube-vip runs on servers only: an agent's NIC may have any name.
  if (i.host.role === 'server' && i.vipInterface !== 'auto' && !linkNames(out(i, 'links')).includes(i.vipInterface)) {
    stops.push(
      stop(
        'NIC_NOT_FOUND',
        i,
        'ip -o link show',
        `controlPlane.interface ${i.vipInterface} does not exist (interfaces: ${linkNames(out(i, 'links')).join(', ')})`,
      ),
    );
  }
  return stops;
}

/** A listener is ours when it runs in this host's own k3s unit: k3s.service on a server, k3s-agent.service on an agent (whose kubelet holds 10250). */
function portStops(i: BaselineInputs): CauseError[] {
  const unit = roleOf(i.host).unit;
  return out(i, 'ports')
    .split('\n')
    .filter(Boolean)
    .filter((line) => !line.endsWith(` ${unit}`))
    .map((line) => {
      const [local] = line.split(' ');
      const prog = line.match(/\(\("([^"]+)"/)?.[1] ?? 'an unknown program';
      return stop('PORT_IN_USE', i, 'ss -ltnp', `${local} is held by ${prog}, not by this host's ${unit}`, line);
    });
}

function diskStop(i: BaselineInputs): CauseError[] {
  // df -P -B1: Filesystem 1-blocks Used Available Capacity Mounted-on
  const cols = out(i, 'disk').split(/\s+/);
  const avail = Number(cols[3]);
  if (!Number.isFinite(avail)) return [stop('DISK_LOW', i, 'df -P /var/lib/rancher', 'free space could not be read', out(i, 'disk'))];
  if (avail >= MIN_FREE_BYTES) return [];
  return [stop('DISK_LOW', i, 'df -P /var/lib/rancher', `${(avail / 1024 ** 2).toFixed(0)} MiB free on ${cols[5]}, below ${MIN_FREE_BYTES / 1024 ** 3} GiB`)];
}

/** Hosts sharing a machine-id or product_uuid (cloned machines). An unreadable product_uuid is skipped. */
export function duplicateIdentities(seen: Map<HostRef, ProbeResults>): CauseError[] {
  const stops: CauseError[] = [];
  for (const key of ['machineId', 'productUuid'] as const) {
    const byValue = new Map<string, string[]>();
    for (const [host, probe] of seen) {
      const v = probe[key]?.code === 0 ? probe[key].stdout.trim() : '';
      if (v) byValue.set(v, [...(byValue.get(v) ?? []), host.name]);
    }
    for (const [value, names] of byValue) {
      if (names.length < 2) continue;
      const what = key === 'machineId' ? '/etc/machine-id' : 'product_uuid';
      stops.push(
        new CauseError('DUPLICATE_HOST_IDENTITY', {
          host: names.join(', '),
          evidence: { command: `cat ${what}`, seen: `${names.join(' and ')} share ${what} ${value}` },
        }),
      );
    }
  }
  return stops;
}
