// Running twin servers as plain processes on loopback addresses (127.x.y.z), for tests on one machine
// without the lab: each server gets its own data dir, node IP, bind address and kubeconfig. Like the
// k3s unit (Restart=always, RestartSec=5s), a server that exits non-zero is started again after 5 s.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalServer {
  name: string;
  ip: string;
  dir: string;
  proc(): ChildProcess;
  /** How many times the process was started. */
  starts(): number;
  output(): string;
  /** The admin kubeconfig, pointed at this server's address instead of 127.0.0.1. */
  kubeconfig(): string;
  token(): string;
  stop(): Promise<void>;
}

export function serverArgs(name: string, ip: string, dir: string, extra: string[] = []): string[] {
  return [
    'server',
    '--data-dir',
    join(dir, 'data'),
    '--node-ip',
    ip,
    '--bind-address',
    ip,
    '--node-name',
    name,
    '--write-kubeconfig',
    join(dir, 'k3s.yaml'),
    '--config',
    join(dir, 'config.yaml'),
    ...extra,
  ];
}

export function startLocal(
  bin: string,
  name: string,
  ip: string,
  dir: string,
  extra: string[] = [],
  opts: { env?: NodeJS.ProcessEnv; restart?: boolean } = {},
): LocalServer {
  mkdirSync(dir, { recursive: true });
  let out = '';
  let stopped = false;
  let starts = 0;
  let proc!: ChildProcess;
  let exited!: Promise<number>;
  const launch = () => {
    starts++;
    proc = spawn(bin, serverArgs(name, ip, dir, extra), {
      env: { ...process.env, NOTIFY_SOCKET: '', K3S_TWIN_HEARTBEAT_MS: '2000', K3S_TWIN_LEARNER_TICK_MS: '1000', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (c) => (out += c));
    proc.stderr!.on('data', (c) => (out += c));
    exited = new Promise<number>((r) => proc.on('exit', (code) => r(code ?? 1)));
    void exited.then((code) => {
      if (!stopped && code !== 0 && opts.restart !== false) setTimeout(() => !stopped && launch(), 5000);
    });
  };
  launch();
  return {
    name,
    ip,
    dir,
    proc: () => proc,
    starts: () => starts,
    output: () => out,
    kubeconfig: () => {
      const kc = readFileSync(join(dir, 'k3s.yaml'), 'utf8').replace('https://127.0.0.1:6443', `https://${ip}:6443`);
      const f = join(dir, 'kc.yaml');
      writeFileSync(f, kc, { mode: 0o600 });
      return f;
    },
    token: () => readFileSync(join(dir, 'data', 'server', 'token'), 'utf8').trim(),
    stop: async () => {
      stopped = true;
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000, detail?: () => string): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${detail ? `\n${detail().slice(-3000)}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
