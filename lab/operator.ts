// The operator's side: the lab key, the lab known_hosts, and the ssh command line that trusts
// exactly those (strict host key checking, as against real hardware).
import { Socket } from 'node:net';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { OPS_USER, OUTSIDE, paths, type HostPlan } from './config.ts';
import { run, waitFor, type RunOptions, type RunResult } from './run.ts';
import { readState } from './state.ts';

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

const trustOptions = () => [
  '-o',
  'StrictHostKeyChecking=yes',
  '-o',
  `UserKnownHostsFile=${paths.knownHosts}`,
  '-o',
  'GlobalKnownHostsFile=/dev/null',
  '-o',
  'IdentitiesOnly=yes',
  '-o',
  'BatchMode=yes',
  '-o',
  'ConnectTimeout=5',
  '-o',
  'LogLevel=ERROR',
  '-i',
  paths.key,
];

/**
 * The jump through the bastion as a ProxyCommand: `-J` would not hand the lab's key and known_hosts to the
 * jump's own ssh (it passes on only -l, -p, -J, -F and -v: openssh/openssh-portable V_9_2_P1 ssh.c, the
 * ProxyJump → ProxyCommand conversion), so the jump carries the same trust options explicitly.
 */
export function proxyThroughBastion(bastion = OUTSIDE.bastion): string[] {
  return ['-o', `ProxyCommand=ssh ${trustOptions().join(' ')} -W %h:%p ${OPS_USER}@${bastion}`];
}

/** True when the lab runs in the bastion shape and `address` is a host behind it (not the bastion itself). */
function behindBastion(address: string): boolean {
  return readState()?.bastion === true && address !== OUTSIDE.bastion;
}

/**
 * ssh options for a lab host: strict host keys against the lab known_hosts, the lab key, no prompts; in
 * the bastion shape, through the bastion for every host behind it.
 */
export function sshArgs(address: string): string[] {
  return [...trustOptions(), ...(behindBastion(address) ? proxyThroughBastion() : []), `${OPS_USER}@${address}`];
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

/**
 * A TCP connect from inside a network namespace (the machine cannot reach the bastion shape's hosts, so
 * the lab asks from a namespace on their segment): bash's /dev/tcp, bounded by `timeout`.
 */
export async function tcpOpenIn(netns: string, address: string, port: number, timeoutMs = 1000): Promise<boolean> {
  const seconds = String(Math.max(1, Math.ceil(timeoutMs / 1000)));
  const res = await run('ip', ['netns', 'exec', netns, 'timeout', seconds, 'bash', '-c', `exec 3<>/dev/tcp/${address}/${port}`], { allowFail: true });
  return res.code === 0;
}

/** Waits until sshd answers and accepts the operator with strict host key checking (through the bastion if there is one). */
export async function waitForSsh(host: HostPlan, timeoutMs = 60_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  // Behind the bastion, the host's port is asked from its own namespace; the SSH login below proves the path.
  const open = behindBastion(host.address) ? () => tcpOpenIn(host.netns, host.address, 22) : () => tcpOpen(host.address, 22);
  if (!(await waitFor(open, timeoutMs, 100))) return false;
  return waitFor(async () => (await sshRun(host, 'true', { allowFail: true, timeoutMs: 10_000 })).code === 0, Math.max(0, end - Date.now()), 250);
}
