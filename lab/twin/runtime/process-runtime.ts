// The kubelet's container runtime on a lab host: each container runs as its own process (shim.ts), started
// detached from k3s and placed in the pod's cgroup the way containerd's runc shim places containers with the
// systemd cgroup driver — a transient scope cri-containerd-<id>.scope in slice
// kubepods-besteffort-pod<uid>.slice (k3s picks the systemd driver when it runs under systemd:
// k3s-io/k3s pkg/agent/containerd/config_linux.go, `Systemd = … && os.Getenv("INVOCATION_ID") != ""`).
// So `systemctl stop k3s` (KillMode=process) and even `systemctl kill k3s` leave it running, as they leave
// real pods. A restarted k3s finds its running tasks under /run/k3s/containerd and adopts them instead of
// starting a second copy (containerd restores its tasks on start); a task no pod wants any more is stopped.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { AddonContext } from '../addons/context.ts';
import type { ContainerRuntime, DaemonProgram, Running, StartArgs } from '../addons/daemonsets.ts';
import { CONTAINERD_STATE, TASK_NAMESPACE, containerId, listTasks, livePid, readSpec, readStatus, removeTask, writeSpec, type TaskSpec } from './tasks.ts';
import { unpackBinaries } from './data-dir.ts';

const POLL_MS = 1000;
/** A shim that has not written its pid this long after its start is taken for dead (and started again). */
const START_GRACE_MS = 15_000;
const STOP_WAIT_MS = 12_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ProcessRuntime implements ContainerRuntime {
  private known = new Set<string>();

  constructor(private ctx: AddonContext) {}

  start(program: DaemonProgram, a: StartArgs): Running {
    const id = containerId(a.pod.metadata.uid, a.container.name);
    this.known.add(id);
    let spec = livePid(undefined, id) ? readSpec(undefined, id) : undefined;
    let spawnedAt = 0;
    const launch = (restartBase: number) => {
      removeTask(undefined, id);
      spec = this.spec(id, program, a, restartBase);
      writeSpec(undefined, spec);
      this.spawn(spec);
      spawnedAt = Date.now();
    };
    if (!spec) launch(a.restartBase ?? -1);
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let lastTotal = spec!.restartBase + 1;
    const poll = () => {
      if (stopped) return;
      const st = readStatus(undefined, id);
      if (st) {
        lastTotal = spec!.restartBase + 1 + (st.state.restartCount ?? 0);
        // The kubelet counts restarts from the pod's count when it (re)started watching: translate.
        a.state({ ...st.state, restartCount: lastTotal - (a.restartBase ?? -1) - 1, startedAt: st.startedAt });
      }
      if (!livePid(undefined, id) && Date.now() - spawnedAt > START_GRACE_MS) {
        // The container's process is gone (killed from outside): the kubelet starts it again.
        a.state({ ready: false, restartCount: lastTotal - (a.restartBase ?? -1), waiting: { reason: 'ContainerCreating' } });
        launch(lastTotal);
      }
      timer = setTimeout(poll, POLL_MS);
    };
    poll();
    return {
      stop: async () => {
        stopped = true;
        clearTimeout(timer);
        this.known.delete(id);
        await stopTask(id);
      },
      detach: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  /** Stops every task no pod of this kubelet runs (its pod was deleted while k3s was down). */
  async prune(): Promise<void> {
    for (const id of listTasks(undefined)) if (!this.known.has(id)) await stopTask(id);
  }

  private spec(id: string, program: DaemonProgram, a: StartArgs, restartBase: number): TaskSpec {
    const c = this.ctx;
    const m = a.pod.metadata;
    return {
      id,
      program: program.name,
      pod: a.pod,
      container: a.container,
      env: a.env,
      restartBase,
      node: {
        name: c.node,
        ip: c.ip,
        dataDir: c.dataDir,
        serviceCidr: c.serviceCidr,
        cniDir: c.cniDir,
        ...(c.root ? { root: c.root } : {}),
        etcd: c.etcd.endpoint,
      },
      log: { ns: m.namespace, pod: m.name, uid: m.uid, container: a.container.name },
    };
  }

  private spawn(spec: TaskSpec): void {
    const shim = unpackBinaries(this.ctx.dataDir);
    const args = [shim, '-namespace', TASK_NAMESPACE, '-id', spec.id, '-address', `${CONTAINERD_STATE}/containerd.sock`];
    const slice = `kubepods-besteffort-pod${String(spec.pod.metadata.uid).replace(/-/g, '_')}.slice`;
    const systemd = Boolean(process.env.INVOCATION_ID) && existsSync('/run/systemd/system');
    const [cmd, argv] = systemd
      ? ['systemd-run', ['--scope', '--quiet', `--unit=cri-containerd-${spec.id}.scope`, `--slice=${slice}`, '--', process.execPath, ...args]]
      : [process.execPath, args];
    // Not k3s's: the shim must not answer systemd's notify socket, nor be taken for the unit's main process.
    const { NOTIFY_SOCKET: _n, INVOCATION_ID: _i, ...env } = process.env;
    const child = spawn(cmd, argv, { detached: true, stdio: 'ignore', env });
    child.on('error', () => undefined);
    child.unref();
  }
}

/** SIGTERM, then SIGKILL after the grace period; the task folder goes either way. */
async function stopTask(id: string): Promise<void> {
  const pid = livePid(undefined, id);
  if (pid) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
    const t0 = Date.now();
    while (livePid(undefined, id) && Date.now() - t0 < STOP_WAIT_MS) await sleep(200);
    const left = livePid(undefined, id);
    if (left) {
      try {
        process.kill(left, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  removeTask(undefined, id);
}
