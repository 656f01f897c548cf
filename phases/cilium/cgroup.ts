// CGROUP_HOSTROOT_NOT_CGROUP2: Cilium's socket load-balancing attaches to the cgroup at cgroup.hostRoot.
// It must be the HOST's cgroup2 root, or host processes (the API server, kubelet, curl over SSH) are left
// untranslated — the 2026-10-03 breakage, where an empty /run/cilium/cgroupv2 with autoMount disabled made
// the agent mount its own cgroup namespace's root.
//
// Decision, per setting (chart defaults: hostRoot /run/cilium/cgroupv2, autoMount enabled):
// - autoMount disabled: the chart only bind-mounts what is already at hostRoot, so `stat -fc %T <hostRoot>`
//   must print cgroup2fs on every node BEFORE the install (and after it).
// - autoMount enabled: the chart's init container mounts cgroup2 at hostRoot from the host's cgroup
//   namespace. Before the install the path may be absent or a plain folder (stat then names the filesystem
//   holding it, e.g. tmpfs): accepted; a cgroup v1 hierarchy there ('cgroupfs') is refused. After the rollout
//   it must be cgroup2fs.
import { CauseError } from '../../src/errors.ts';
import { shq } from '../../src/util/shell.ts';
import { valueAt } from './values-gates.ts';

const CHART_DEFAULT_HOST_ROOT = '/run/cilium/cgroupv2';

export interface CgroupSetting {
  hostRoot: string;
  autoMount: boolean;
}

export function cgroupSetting(values: Record<string, unknown>): CgroupSetting {
  const hostRoot = valueAt(values, 'cgroup.hostRoot');
  const autoMount = valueAt(values, 'cgroup.autoMount.enabled');
  return { hostRoot: typeof hostRoot === 'string' && hostRoot ? hostRoot : CHART_DEFAULT_HOST_ROOT, autoMount: autoMount !== false };
}

/** The read-only probe to run on every node (exit 1 and no output when the path does not exist). */
export function cgroupProbeCommand(setting: CgroupSetting): string {
  return `stat -fc %T ${shq(setting.hostRoot)}`;
}

export interface CgroupSeen {
  host: string;
  stdout: string;
  code: number | null;
}

export function checkCgroupHostRoot(setting: CgroupSetting, seen: CgroupSeen[], stage: 'before-install' | 'installed'): CauseError[] {
  const command = cgroupProbeCommand(setting);
  const how = setting.autoMount ? 'cgroup.autoMount.enabled is true' : 'cgroup.autoMount.enabled is false, so the chart only bind-mounts what is there';
  return seen.flatMap((s) => {
    const fs = s.code === 0 ? s.stdout.trim() : '';
    if (fs === 'cgroup2fs') return [];
    if (setting.autoMount && stage === 'before-install' && fs !== 'cgroupfs') return [];
    const what = fs ? `a ${fs} filesystem` : 'absent';
    return [
      new CauseError('CGROUP_HOSTROOT_NOT_CGROUP2', {
        host: s.host,
        evidence: {
          command,
          exitCode: s.code,
          excerpt: `spec.values.cgroup.hostRoot: ${setting.hostRoot}`,
          seen: `${setting.hostRoot} is ${what}, not cgroup2fs (${how})`,
        },
      }),
    ];
  });
}
