// node-baseline: every host checked (read-only gates, check mode too) and prepared: hostname, kernel
// modules, sysctls. Runs on all hosts in parallel with a bound; cloned machines are caught before
// anything changes.
import type { Phase, Plan, Step } from '../../src/engine/phase.ts';
import { hostFact } from '../../src/engine/facts.ts';
import { fileChange, type Change } from '../../src/engine/changes.ts';
import { archOfFile } from '../../src/util/elf-arch.ts';
import { shq } from '../../src/util/shell.ts';
import { allHostRefs } from '../../src/inventory/hosts.ts';
import { parallelismOf } from '../../src/inventory/parallelism.ts';
import { baselineStops, duplicateIdentities, nicOfAddress } from './checks.ts';
import { versionStops } from './k3s-version.ts';
import { imageStops } from '../../src/images/stops.ts';
import { renderCiliumRelease } from '../../src/gitops/cilium-release.ts';
import { baselineProbes, identityProbes, sysctlValues } from './probes.ts';

const MODULES = ['br_netfilter', 'overlay'];
const MODULES_FILE = '/etc/modules-load.d/k3s.conf';
const SYSCTL_FILE = '/etc/sysctl.d/90-k3s.conf';
/** ip_forward for routing pods; bridge-nf for br_netfilter users; rp_filter 0 because Cilium's datapath needs it off. */
const SYSCTLS: Record<string, string> = {
  'net.ipv4.ip_forward': '1',
  'net.bridge.bridge-nf-call-iptables': '1',
  'net.ipv4.conf.all.rp_filter': '0',
};

/** The NIC that holds the host's inventory address. */
const nic = hostFact<string | undefined>('nic');

const checks: Step<{ binaryArch: string; operatorNow: number }> = {
  id: 'checks',
  title: 'host checks (tools, arch, kernel, cgroup2, bpf, modules, clock, route, NIC, ports, disk)',
  probe: () => baselineProbes,
  local: async (_h, ctx) => ({ binaryArch: await archOfFile(ctx.inventory.derived.paths.k3sBinary), operatorNow: ctx.clock.now() / 1000 }),
  plan: ({ host, probe, local, ctx }): Plan => ({
    changes: [],
    stops: baselineStops({
      host,
      probe,
      binaryArch: local.binaryArch,
      operatorNow: local.operatorNow,
      vipInterface: ctx.inventory.inventory.controlPlane.interface,
    }),
    facts: [nic(nicOfAddress(probe.addrs.stdout, host.address))],
  }),
};

const HOSTS_FILE = '/etc/hosts';

/**
 * /etc/hosts that resolves the host's own name, as Debian's installer writes it (`127.0.1.1 <name>`):
 * sudo warns "unable to resolve host" on every command otherwise. Unchanged when a line already names
 * the host; else the 127.0.1.1 line (the old name's) is replaced, or one is added after localhost.
 */
export function hostsWithOwnName(current: string | null, name: string): string {
  const lines = (current ?? '127.0.0.1\tlocalhost\n').replace(/\n$/, '').split('\n');
  const names = (l: string) => l.replace(/#.*/, '').trim().split(/\s+/).slice(1);
  if (current !== null && lines.some((l) => names(l).includes(name))) return current;
  const own = `127.0.1.1\t${name}`;
  const at = lines.findIndex((l) => l.replace(/#.*/, '').trim().split(/\s+/)[0] === '127.0.1.1');
  if (at >= 0) lines[at] = own;
  else {
    const localhost = lines.findIndex((l) => l.replace(/#.*/, '').trim().split(/\s+/)[0] === '127.0.0.1');
    lines.splice(localhost + 1, 0, own);
  }
  return `${lines.join('\n')}\n`;
}

const hostname: Step = {
  id: 'hostname',
  title: 'hostname = inventory name, resolvable in /etc/hosts',
  probe: () => ({ hostname: baselineProbes.hostname, etcHostname: { command: 'cat /etc/hostname' }, etcHosts: { command: `cat ${HOSTS_FILE}` } }),
  plan: ({ host, probe }) => {
    const hosts = probe.etcHosts.code === 0 ? probe.etcHosts.stdout : null;
    const changes: Change[] = [
      ...fileChange('/etc/hostname', `${host.name}\n`, { content: probe.etcHostname.code === 0 ? probe.etcHostname.stdout : null }, { mode: '0644' }),
      // before the running name changes, so the new name resolves from the first command on
      ...fileChange(HOSTS_FILE, hostsWithOwnName(hosts, host.name), { content: hosts }, { mode: '0644' }),
    ];
    if (probe.hostname.stdout.trim() !== host.name)
      changes.push({ kind: 'command', description: `set the running hostname to ${host.name}`, command: `hostname ${shq(host.name)}`, sudo: true });
    return { changes };
  },
};

const modules: Step = {
  id: 'modules',
  title: 'kernel modules br_netfilter, overlay (loaded and persisted)',
  probe: () => ({
    file: { command: `cat ${MODULES_FILE}` },
    br_netfilter: baselineProbes.br_netfilter,
    overlay: baselineProbes.overlay,
  }),
  plan: ({ probe }) => {
    const changes: Change[] = [
      ...fileChange(MODULES_FILE, MODULES.map((m) => `${m}\n`).join(''), { content: probe.file.code === 0 ? probe.file.stdout : null }, { mode: '0644' }),
    ];
    const toLoad = MODULES.filter((m) => probe[m].stdout.trim() === 'loadable');
    if (toLoad.length) changes.push({ kind: 'command', description: `load ${toLoad.join(', ')}`, command: `modprobe -a ${toLoad.join(' ')}`, sudo: true });
    return { changes };
  },
};

const sysctls: Step = {
  id: 'sysctls',
  title: 'sysctls for k3s and Cilium (live and persisted)',
  probe: () => ({ file: { command: `cat ${SYSCTL_FILE}` }, live: baselineProbes.sysctls }),
  plan: ({ probe }) => {
    const content = Object.entries(SYSCTLS)
      .map(([k, v]) => `${k} = ${v}\n`)
      .join('');
    const changes: Change[] = [
      ...fileChange(
        SYSCTL_FILE,
        `# Written by bootstrap (node-baseline).\n${content}`,
        { content: probe.file.code === 0 ? probe.file.stdout : null },
        { mode: '0644' },
      ),
    ];
    const live = sysctlValues(probe.live.stdout);
    const differ = Object.entries(SYSCTLS).filter(([k, v]) => live[k] !== v);
    if (differ.length) {
      changes.push({
        kind: 'command',
        description: `set ${differ.map(([k, v]) => `${k}=${v}`).join(', ')}`,
        command: `sysctl -q -p ${SYSCTL_FILE}`,
        sudo: true,
      });
    }
    return { changes };
  },
};

export const nodeBaseline: Phase = {
  id: 'node-baseline',
  title: 'prepare every host (checks, hostname, modules, sysctls)',
  needs: [],
  // The binary every k3s phase uploads is the release the inventory names, and the add-on image archives
  // hold every image the add-ons pull (an air-gapped site), before any host changes.
  prepare: async (ctx) => ({
    stops: [
      ...(await versionStops(ctx.inventory.derived.paths.k3sBinary, ctx.inventory.inventory.k3s.version)),
      ...(await imageStops(ctx.inventory, async () => (await renderCiliumRelease(ctx)).values)),
    ],
  }),
  hosts: (c) => allHostRefs(c.inventory),
  concurrency: (c) => parallelismOf(c.inventory),
  preflight: { probe: () => identityProbes, check: (seen) => duplicateIdentities(seen) },
  steps: [checks, hostname, modules, sysctls],
};
