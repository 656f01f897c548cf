// Every program the engine runs on a host, with the Debian 12 package that provides it: the one list
// node-baseline checks before any change (TOOL_MISSING). All of them are in Debian's required or important
// packages, plus sudo; k3s's own subcommands (`k3s kubectl`, `k3s etcd-snapshot`) come from the binary the
// engine uploads. A command added to a phase, the engine (src/engine) or the transport (src/transport) that
// calls another program on a host belongs here (test/unit/host-tools-complete.test.ts reads the commands in
// phases/ and src/ and fails on a program missing here).
import { CauseError } from '../../src/errors.ts';
import type { HostRef, ProbeCommand, ProbeResult } from '../../src/engine/phase.ts';

export const HOST_TOOLS: Readonly<Record<string, string>> = {
  // the shell every command runs in (transport, probe batches, file writes)
  sh: 'dash',
  // root for every change and for privileged probes (src/transport/sudo.ts)
  sudo: 'sudo',
  // probe batches (src/engine/probe-batch.ts), file writes and uploads (src/engine/apply.ts), locks, reads
  cat: 'coreutils',
  mktemp: 'coreutils',
  rm: 'coreutils',
  mkdir: 'coreutils',
  dirname: 'coreutils',
  chmod: 'coreutils',
  chown: 'coreutils',
  mv: 'coreutils',
  // a reset lists and removes Cilium's leftovers and k3s's files (phases/k3s/reset-leftovers.ts)
  ls: 'coreutils',
  readlink: 'coreutils',
  rmdir: 'coreutils',
  head: 'coreutils',
  tail: 'coreutils',
  cut: 'coreutils',
  date: 'coreutils',
  uname: 'coreutils',
  stat: 'coreutils',
  df: 'coreutils',
  sha256sum: 'coreutils',
  // waits inside a command (phases/k3s/restore-passwords.ts: until the API lists the node passwords)
  sleep: 'coreutils',
  // backup's object inventory joins the resource types for one kubectl call (src/backup/objects.ts)
  paste: 'coreutils',
  grep: 'grep',
  sed: 'sed',
  // node-baseline's hostname step
  hostname: 'hostname',
  // routes, addresses, links (node-baseline, kube-vip) and listeners (node-baseline's port check)
  ip: 'iproute2',
  // a reset removes the tc filters Cilium attached to the host's links (phases/k3s/reset-leftovers.ts)
  tc: 'iproute2',
  ss: 'iproute2',
  modprobe: 'kmod',
  sysctl: 'procps',
  // stopping a command that overran its budget (src/transport/sudo.ts sudoStopCommand)
  pgrep: 'procps',
  pkill: 'procps',
  ps: 'procps',
  // the host lock is taken under flock, which the kernel releases when its holder dies (src/engine/lock.ts)
  flock: 'util-linux',
  systemctl: 'systemd',
  journalctl: 'systemd',
  // --replace in place stops everything k3s started (phases/k3s/replace-steps.ts): shim process trees,
  // mounts, CNI namespaces and links
  awk: 'mawk',
  sort: 'coreutils',
  wc: 'coreutils',
  xargs: 'findutils',
  kill: 'procps',
  umount: 'mount',
};

/**
 * Prints each missing tool's name. As root's PATH (the batch adds the sbin folders a non-root login lacks),
 * where the engine runs them. Exits 0 with "checked" last, so a batch whose framing broke is never read
 * as "nothing missing".
 */
export const toolsProbe: ProbeCommand = {
  command: `for t in ${Object.keys(HOST_TOOLS).join(' ')}; do command -v "$t" >/dev/null 2>&1 || echo "missing $t"; done; echo checked`,
};

/** The tools a host lacks, from toolsProbe's output; undefined when the output cannot be trusted. */
function missingTools(r: ProbeResult | undefined): string[] | undefined {
  const lines = (r?.stdout ?? '').split('\n').map((l) => l.trim());
  if (r?.code !== 0 || !lines.includes('checked')) return undefined;
  return lines.filter((l) => l.startsWith('missing ')).map((l) => l.slice('missing '.length));
}

export function toolStops(host: HostRef, r: ProbeResult | undefined): CauseError[] {
  const missing = missingTools(r);
  const command = 'command -v ' + Object.keys(HOST_TOOLS).join(' ');
  if (missing === undefined) {
    // The batch itself (mktemp, sh) did not run as it must: nothing it reported can be trusted.
    const seen = `the check of the host's tools did not run (exit ${r?.code ?? 'none'}): sh or mktemp (dash, coreutils) may be missing`;
    return [
      new CauseError('TOOL_MISSING', { host: host.name, evidence: { command, exitCode: r?.code, seen, excerpt: (r?.stderr ?? '').trim() || undefined } }),
    ];
  }
  return missing.map((t) => {
    const pkg = HOST_TOOLS[t] ?? t;
    return new CauseError('TOOL_MISSING', {
      host: host.name,
      message: `${t} is missing on ${host.name}`,
      evidence: { command: `command -v ${t}`, seen: `${t} is not installed (Debian package ${pkg}: apt-get install ${pkg})` },
    });
  });
}
