// Real OpenSSH servers for the SSH tests: Debian's /usr/sbin/sshd, run in the foreground with a config
// of our own on a 127.0.0.x loopback address, with host keys generated for the test. Needs root (sshd
// switches to the logged-in user). Two test users are created once and kept:
//   bsops — passwordless sudo (NOPASSWD), the user the tool is meant to run as;
//   bspw  — sudo that asks for a password (SUDO_NEEDS_PASSWORD).
// Their authorized keys live in each server's own directory (AuthorizedKeysFile), not in their homes.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OPS_USER = 'bsops';
export const PW_USER = 'bspw';
const SUDOERS_FILE = '/etc/sudoers.d/bootstrap-test-users';
const SSHD = '/usr/sbin/sshd';

type HostKeyType = 'ed25519' | 'ecdsa' | 'rsa';

/** Create the test users and their sudo rules (idempotent). */
export function ensureTestUsers(): void {
  for (const user of [OPS_USER, PW_USER]) {
    if (!userExists(user)) {
      try {
        execFileSync('useradd', ['--create-home', '--shell', '/bin/bash', user], { stdio: 'pipe' });
      } catch (err) {
        if (!userExists(user)) throw err; // another test file created it at the same moment
      }
    }
    // '*' instead of useradd's '!': no password login, but not "locked" (sshd refuses locked accounts
    // when it does not use PAM).
    execFileSync('usermod', ['-p', '*', user], { stdio: 'pipe' });
  }
  const rules = `${OPS_USER} ALL=(ALL) NOPASSWD: ALL\n${PW_USER} ALL=(ALL) ALL\n`;
  if (!existsSync(SUDOERS_FILE) || readFileSync(SUDOERS_FILE, 'utf8') !== rules) {
    // Checked before it is installed: a broken file in sudoers.d breaks sudo for the whole machine.
    const draft = `${SUDOERS_FILE}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(draft, rules, { mode: 0o440 });
    try {
      execFileSync('visudo', ['-c', '-q', '-f', draft], { stdio: 'pipe' });
      renameSync(draft, SUDOERS_FILE);
    } finally {
      rmSync(draft, { force: true });
    }
  }
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege separation directory
}

export interface Keypair {
  privateKeyPath: string;
  publicKey: string;
}

function userExists(user: string): boolean {
  try {
    execFileSync('id', ['-u', user], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A fresh ed25519 keypair in `dir` (no passphrase). */
export function makeKeypair(dir: string, name: string): Keypair {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', path], { stdio: 'pipe' });
  return { privateKeyPath: path, publicKey: readFileSync(`${path}.pub`, 'utf8').trim() };
}

/** A free TCP port on `address` (bound and released; the race is harmless for loopback tests). */
export async function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, address, () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface SshdOptions {
  address: string;
  hostKeyTypes?: HostKeyType[];
  /** Public keys authorized for every test user. */
  authorizedKeys: string[];
  /** Extra sshd_config lines. */
  extraConfig?: string[];
}

export interface Sshd {
  address: string;
  port: number;
  dir: string;
  /** `<type> <base64>` of each host key, as a known_hosts line would carry it. */
  hostKeys: Record<HostKeyType, string | undefined>;
  /** A known_hosts line for this server (all its host keys, one per line). */
  knownHostsLines(): string;
  /** The server's log so far. */
  log(): string;
  /** TCP connections the server accepted so far. */
  connections(): number;
  /** Logins the server accepted so far. */
  logins(): number;
  /** The master sshd process id. */
  pid: number;
  stop(): Promise<void>;
}

/** Start one sshd; resolves when it listens. */
export async function startSshd(opts: SshdOptions): Promise<Sshd> {
  // The free port may be taken between probing and sshd's bind (other suites run in parallel): try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startSshdOnce(opts);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startSshdOnce(opts: SshdOptions): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-sshd-'));
  chmodSync(dir, 0o755); // the users must reach their authorized_keys below it
  const types = opts.hostKeyTypes ?? ['ed25519'];
  const hostKeys: Record<HostKeyType, string | undefined> = { ed25519: undefined, ecdsa: undefined, rsa: undefined };
  for (const t of types) {
    const path = join(dir, `ssh_host_${t}_key`);
    execFileSync('ssh-keygen', ['-q', '-t', t, '-N', '', '-C', '', '-f', path], { stdio: 'pipe' });
    hostKeys[t] = readFileSync(`${path}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
  }
  const authDir = join(dir, 'authorized_keys');
  mkdirSync(authDir, { mode: 0o755 });
  chmodSync(authDir, 0o755);
  for (const user of [OPS_USER, PW_USER]) {
    writeFileSync(join(authDir, user), opts.authorizedKeys.join('\n') + '\n', { mode: 0o644 });
  }
  const port = await freePort(opts.address);
  const logFile = join(dir, 'sshd.log');
  const config = [
    // sshd takes the first value of an option: the caller's lines come first so they win.
    ...(opts.extraConfig ?? []),
    `ListenAddress ${opts.address}:${port}`,
    ...types.map((t) => `HostKey ${join(dir, `ssh_host_${t}_key`)}`),
    `PidFile ${join(dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${join(authDir, '%u')}`,
    'StrictModes no', // the temp dir's parents (/tmp) are world-writable
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    'PermitRootLogin no',
    'AllowTcpForwarding yes',
    'LogLevel VERBOSE',
    'MaxStartups 100',
    'MaxSessions 20',
    'Subsystem sftp internal-sftp',
  ].join('\n');
  const configFile = join(dir, 'sshd_config');
  writeFileSync(configFile, config + '\n');
  const child: ChildProcess = spawn(SSHD, ['-D', '-f', configFile, '-E', logFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const deadline = Date.now() + 10_000;
  while (!readLog().includes('Server listening on')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`sshd on ${opts.address}:${port} did not start: ${stderr}${readLog()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const count = (re: RegExp) =>
    readLog()
      .split('\n')
      .filter((l) => re.test(l)).length;
  return {
    address: opts.address,
    port,
    dir,
    hostKeys,
    pid: child.pid!,
    knownHostsLines: () => types.map((t) => `[${opts.address}]:${port} ${hostKeys[t]}`).join('\n') + '\n',
    log: readLog,
    connections: () => count(/Connection from .* port \d+ on /),
    logins: () => count(/Accepted publickey for /),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A temp directory for a suite's own files (keys, known_hosts, ssh config); removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
