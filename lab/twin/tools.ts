// Where the twins find the programs they run that a stock Debian 12 server does not have on its PATH.
// A lab host is as bare as a real one (Debian's required and important packages, openssh-server, sudo),
// so what the twins need privately lives in one folder off every PATH (lab/README.md, "What the twins
// bring"): the machine's Node.js, etcd, etcdctl and git bind-mounted read-only, and the root filesystem's
// own arping, openssl and kubectl moved there. Off a lab host (the twin run as plain processes on the machine, in
// tests) the folder does not exist and the program is looked up on the PATH as usual.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const LAB_TOOLS_DIR = '/opt/bootstrap-lab/bin';

/** Programs the lab puts in LAB_TOOLS_DIR (lab/boot-script.ts mounts, lab/rootfs-customize.ts moves). */
export const LAB_TOOLS = ['node', 'etcd', 'etcdctl', 'kubectl', 'git', 'arping', 'openssl'] as const;
export type LabTool = (typeof LAB_TOOLS)[number];

/** The program to exec: the lab's private copy when the host has one, else the name (found on PATH). */
export function labTool(name: LabTool, dir = LAB_TOOLS_DIR): string {
  const p = join(dir, name);
  return existsSync(p) ? p : name;
}
