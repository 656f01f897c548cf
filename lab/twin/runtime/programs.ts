// The add-on twins a container can run, by the name the kubelet records in the task's config.json.
import { join } from 'node:path';
import type { DaemonProgram } from '../addons/daemonsets.ts';
import { ciliumAgentProgram } from '../addons/cilium/program.ts';
import { kubeVipProgram } from '../addons/kube-vip/program.ts';
import { fileNet, hostNet } from '../addons/kube-vip/net.ts';

/** Every program, for a node whose add-on files live under `root` (tests on one machine) or on the host. */
export function daemonPrograms(root?: string): DaemonProgram[] {
  return [kubeVipProgram(root ? fileNet(join(root, 'vip-addresses')) : hostNet), ciliumAgentProgram()];
}
