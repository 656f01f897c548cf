// The operator's side: the lab key, the lab known_hosts, and the ssh command line that trusts
// exactly those (strict host key checking, as against real hardware).
import { Socket } from 'node:net';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { OPS_USER, paths, type HostPlan } from './config.ts';
import { run, waitFor, type RunOptions, type RunResult } from './run.ts';

export async function ensureOperatorKey(): Promise<string> {
  mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
  mkdirSync(paths.artifacts, { recursive: true, mode: 0o700 });
  if (!existsSync(paths.key)) {
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bootstrap-lab-operator', '-f', paths.key]);
  }
  return readFileSync(`${paths.key}.pub`, 'utf8');
}

/** One line per host address with that host's own key. */
export function knownHostsText(entries: { address: string; publicKey: string }[]): string {
  return entries.map((e) => `${e.address} ${e.publicKey}\n`).join('');
}

export function writeKnownHosts(entries: { address: string; publicKey: string }[]): void {
  writeFileSync(paths.knownHosts, knownHostsText(entries), { mode: 0o600 });
}

/** ssh options for a lab host: strict host keys against the lab known_hosts, the lab key, no prompts. */
export function sshArgs(address: string): string[] {
  return [
    '-o', 'StrictHostKeyChecking=yes',
    '-o', `UserKnownHostsFile=${paths.knownHosts}`,
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'IdentitiesOnly=yes',
    '-o', 'BatchMode=yes',
    '-o', 'ConnectTimeout=5',
    '-o', 'LogLevel=ERROR',
    '-i', paths.key,
    `${OPS_USER}@${address}`,
  ];
}

/** Runs `cmd` on a host over real SSH (as ops). */
export function sshRun(host: HostPlan, cmd: string, opts: RunOptions = {}): Promise<RunResult> {
  return run('ssh', [...sshArgs(host.address), cmd], opts);
}

export function tcpOpen(address: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('error', () => done(false));
    s.connect(port, address, () => done(true));
  });
}

/** Waits until sshd answers and accepts the operator with strict host key checking. */
export async function waitForSsh(host: HostPlan, timeoutMs = 60_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  if (!(await waitFor(() => tcpOpen(host.address, 22), timeoutMs, 100))) return false;
  return waitFor(async () => (await sshRun(host, 'true', { allowFail: true, timeoutMs: 10_000 })).code === 0, Math.max(0, end - Date.now()), 250);
}
