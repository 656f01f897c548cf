// One container of one pod, as its own process: what containerd-shim-runc-v2 and the container it runs are
// on a k3s node, in one process. It is started by the kubelet's process runtime (process-runtime.ts) as
// <data-dir>/data/<hash>/bin/containerd-shim-runc-v2 -namespace k8s.io -id <id> (k3s runs the shim from
// there; k3s-io/k3s install.sh's killall finds shims by exactly that path), in its own systemd scope, so it
// outlives k3s.service (KillMode=process) as real containers do. It talks to the cluster as a pod does:
// through the API address its env names and the datastore behind it, so when k3s stops on this node its
// requests fail (kube-vip's lease renewals, for one) while the process goes on running.
import { ObjectStore } from '../api/store.ts';
import { ResourceRegistry, keyPrefix } from '../api/resources.ts';
import type { AddonContext } from '../addons/context.ts';
import type { ContainerState } from '../addons/daemonsets.ts';
import { PodLogs } from '../addons/pod-logs.ts';
import { EtcdClient } from '../etcd/client.ts';
import { daemonPrograms } from './programs.ts';
import { readSpec, removeTask, writePid, writeStatus } from './tasks.ts';

/** How long a stopped container gets to exit before it is killed (the kubelet's grace period, shortened). */
const STOP_GRACE_MS = 10_000;

export async function runShim(argv: string[]): Promise<void> {
  const id = argv[argv.indexOf('-id') + 1] ?? '';
  const spec = readSpec(undefined, id);
  if (!spec) {
    process.stderr.write(`containerd-shim: no task ${id}\n`);
    process.exit(1);
  }
  writePid(undefined, id, process.pid);
  const n = spec.node;
  const etcd = new EtcdClient(n.etcd);
  const store = new ObjectStore(etcd);
  const registry = new ResourceRegistry(async () =>
    (await etcd.list(keyPrefix({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' }))).kvs.map((kv) => JSON.parse(kv.value)),
  );
  const ctx: AddonContext = {
    node: n.name,
    ip: n.ip,
    store,
    registry,
    etcd,
    dataDir: n.dataDir,
    serviceCidr: n.serviceCidr,
    cniDir: n.cniDir,
    ...(n.root ? { root: n.root } : {}),
  };
  const program = daemonPrograms(n.root).find((p) => p.name === spec.program);
  if (!program) {
    process.stderr.write(`containerd-shim: no program ${spec.program}\n`);
    process.exit(1);
  }
  const logs = new PodLogs(etcd, n.root ? `${n.root}/var/log/pods` : undefined);
  const startedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  let restartCount = 0;
  const state = (s: ContainerState) => {
    if (s.restartCount !== undefined) restartCount = s.restartCount;
    writeStatus(undefined, id, { state: { ...s, restartCount }, startedAt });
  };
  const running = program.start({
    ctx,
    pod: spec.pod,
    container: spec.container,
    env: spec.env,
    log: logs.writer(spec.log.ns, spec.log.pod, spec.log.uid, spec.log.container),
    logFor: (name, run) => logs.writer(spec.log.ns, spec.log.pod, spec.log.uid, name, run),
    state,
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(137), STOP_GRACE_MS).unref();
    await running.stop();
    await logs.flush().catch(() => undefined);
    removeTask(undefined, id);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  // Keeps the process alive between the program's timers.
  setInterval(() => undefined, 1 << 30);
}
