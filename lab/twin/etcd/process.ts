// The datastore is a real etcd member per server (k3s embeds etcd: pkg/etcd/etcd.go, pkg/daemons/executor).
// The twin runs Debian's etcd as a child process and must not leave it behind: k3s.service has
// KillMode=process, so systemd would not stop a child on restart. A pid file lets a restarted twin
// kill a child its predecessor left after being SIGKILLed.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { labTool } from '../tools.ts';

export interface EtcdOptions {
  name: string;
  dataDir: string; // <data-dir>/server/db/etcd
  nodeIP: string;
  listenLoopback: boolean;
  initialCluster: string; // name=peerURL,...
  state: 'new' | 'existing';
  forceNewCluster?: boolean;
}

export const peerURL = (ip: string) => `http://${hostPort(ip, 2380)}`;
export const clientURL = (ip: string) => `http://${hostPort(ip, 2379)}`;
function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function pidFile(dataDir: string): string {
  return `${dataDir}.pid`;
}

/** Kills an etcd left running by a previous twin process (SIGKILLed parent, KillMode=process). */
function killStaleEtcd(dataDir: string): void {
  const f = pidFile(dataDir);
  if (!existsSync(f)) return;
  const pid = Number(readFileSync(f, 'utf8'));
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (cmd.includes('etcd')) {
      process.kill(pid, 'SIGKILL');
    }
  } catch {
    // not running any more
  }
  rmSync(f, { force: true });
}

export interface EtcdChild {
  child: ChildProcess;
  /** Resolves with the exit code when the member exits. */
  exited: Promise<number>;
  stop(): Promise<void>;
}

export function startEtcd(o: EtcdOptions, onLine: (line: string) => void): EtcdChild {
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(o.dataDir, 0o700);
  killStaleEtcd(o.dataDir);
  const clientURLs = [clientURL(o.nodeIP)];
  if (o.listenLoopback && o.nodeIP !== '127.0.0.1') clientURLs.push(clientURL('127.0.0.1'));
  const args = [
    `--name=${o.name}`,
    `--data-dir=${o.dataDir}`,
    `--listen-client-urls=${clientURLs.join(',')}`,
    `--advertise-client-urls=${clientURL(o.nodeIP)}`,
    `--listen-peer-urls=${peerURL(o.nodeIP)}`,
    `--initial-advertise-peer-urls=${peerURL(o.nodeIP)}`,
    `--initial-cluster=${o.initialCluster}`,
    `--initial-cluster-state=${o.state}`,
    // k3s's defaults (pkg/etcd/etcd.go cluster()): heartbeat 500ms, election timeout 5000ms.
    '--heartbeat-interval=500',
    '--election-timeout=5000',
    // kube-apiserver compacts etcd every 5 minutes; watches from an older revision then get 410 Gone.
    '--auto-compaction-mode=periodic',
    '--auto-compaction-retention=5m',
    '--logger=zap',
    '--log-outputs=stderr',
  ];
  if (o.forceNewCluster) args.push('--force-new-cluster');
  // etcd would answer systemd's NOTIFY_SOCKET itself (READY=1 as soon as it serves); only k3s may do that.
  const { NOTIFY_SOCKET: _n, ...env } = process.env;
  const child = spawn(labTool('etcd'), args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  writeFileSync(pidFile(o.dataDir), String(child.pid));
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', onLine);
  }
  const exited = new Promise<number>((resolve) => child.on('exit', (code, sig) => resolve(code ?? (sig ? 128 : 1))));
  const kill = () => {
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  };
  process.on('exit', kill);
  return {
    child,
    exited,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(kill, 5000);
      await exited;
      clearTimeout(t);
      rmSync(pidFile(o.dataDir), { force: true });
    },
  };
}

/** True once a WAL exists: the datastore was initialised before (k3s IsInitialized). */
export function isInitialized(dbEtcdDir: string): boolean {
  return existsSync(join(dbEtcdDir, 'member', 'wal'));
}
