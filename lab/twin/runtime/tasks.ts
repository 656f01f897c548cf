// Where the twin's container runtime keeps its running containers ("tasks"), as containerd does on k3s:
// k3s runs containerd with its state in /run/k3s/containerd (tmpfs; k3s-io/k3s pkg/agent/containerd
// config_linux.go getContainerdArgs `--state`), and the runc v2 runtime keeps one folder per task under
// io.containerd.runtime.v2.task/<namespace>/<id> (on a k3s node `mount` lists each container's rootfs at
// /run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/rootfs; the CRI plugin's namespace is k8s.io).
// A twin task folder holds config.json (what the kubelet asked to run: not an OCI spec), init.pid (the
// container's pid, as the runc shim writes it) and status.json (the container's state, read back by the kubelet).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContainerState } from '../addons/daemonsets.ts';
import { K3S_COMMIT, K3S_VERSION } from '../version.ts';

export const CONTAINERD_STATE = '/run/k3s/containerd';
export const TASK_NAMESPACE = 'k8s.io';
const taskRoot = (root = '') => join(root || '/', CONTAINERD_STATE, 'io.containerd.runtime.v2.task', TASK_NAMESPACE);

/** The shim's name in k3s's data dir: k3s runs containerd-shim-runc-v2 from <data-dir>/data/<hash>/bin. */
export const SHIM_NAME = 'containerd-shim-runc-v2';
/** k3s unpacks its binaries to <data-dir>/data/<sha256 of the bundle>; the twin names its folder after its version. */
const dataHash = () => createHash('sha256').update(`${K3S_VERSION} ${K3S_COMMIT}`).digest('hex');
export const shimPath = (dataDir: string) => join(dataDir, 'data', dataHash(), 'bin', SHIM_NAME);

/** A container id as containerd's CRI plugin makes them: 64 hex digits (here stable per pod and container). */
export const containerId = (podUid: string, container: string) => createHash('sha256').update(`${podUid}/${container}`).digest('hex');

/** What the kubelet asks the runtime to run: the program (which add-on twin), the pod and its container. */
export interface TaskSpec {
  id: string;
  program: string;
  pod: any;
  container: any;
  env: Record<string, string>;
  /** The restart count the pod had when this container was first started (status.json counts from there). */
  restartBase: number;
  /** The node's identity and files: what the container sees of its host. */
  node: { name: string; ip: string; dataDir: string; serviceCidr: string; cniDir: string; root?: string; etcd: string };
  /** Where kubelet keeps the container's log: /var/log/pods/<ns>_<pod>_<uid>/<container>/0.log. */
  log: { ns: string; pod: string; uid: string; container: string };
}

export interface TaskStatus {
  state: ContainerState;
  startedAt: string;
}

const taskDir = (root: string | undefined, id: string) => join(taskRoot(root), id);

export function writeSpec(root: string | undefined, spec: TaskSpec): void {
  const dir = taskDir(root, spec.id);
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
}

export function readSpec(root: string | undefined, id: string): TaskSpec | undefined {
  try {
    return JSON.parse(readFileSync(join(taskDir(root, id), 'config.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Written whole and renamed, so a reader never sees half a file. */
export function writeStatus(root: string | undefined, id: string, s: TaskStatus): void {
  const f = join(taskDir(root, id), 'status.json');
  try {
    writeFileSync(`${f}.new`, JSON.stringify(s));
    renameSync(`${f}.new`, f);
  } catch {
    /* the task folder is gone (the container is being deleted) */
  }
}

export function readStatus(root: string | undefined, id: string): TaskStatus | undefined {
  try {
    return JSON.parse(readFileSync(join(taskDir(root, id), 'status.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

export function writePid(root: string | undefined, id: string, pid: number): void {
  writeFileSync(join(taskDir(root, id), 'init.pid'), String(pid));
}

/** The task's pid while its process runs (and is the shim of that task); undefined otherwise. */
export function livePid(root: string | undefined, id: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(taskDir(root, id), 'init.pid'), 'utf8'));
    if (!pid) return undefined;
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmd.includes(SHIM_NAME) || !cmd.includes(id)) return undefined;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /\) Z /.test(stat) ? undefined : pid;
  } catch {
    return undefined;
  }
}

export function listTasks(root: string | undefined): string[] {
  const dir = taskRoot(root);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => /^[0-9a-f]{64}$/.test(n));
}

export function removeTask(root: string | undefined, id: string): void {
  rmSync(taskDir(root, id), { recursive: true, force: true });
}
