// The lab's GitOps git server: the machine's own OpenSSH sshd serving one bare repository read-only to
// one deploy key, as a Git forge would. It runs in its own network namespace on the lab's bridge (address
// .2 of the lab's subnet, port 22), so `lab down` removes it with the hosts' namespaces, also after a killed
// `lab up`; and in a private mount namespace whose /etc/passwd and /etc/group carry a `git` user, so
// nothing is added to the machine's users or its sshd configuration.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LINK_PREFIX, NET, paths } from './config.ts';
import { netnsExists } from './network.ts';
import { netnsPids } from './processes.ts';
import { tcpOpenIn } from './operator.ts';
import { run, waitFor } from './run.ts';

/** The git server's own address on the lab's segment (.1 is the operator, .9 the VIP, hosts from .10). */
export const GIT_SERVER_ADDRESS = `${NET.base}2`;
const GIT_SERVER_NETNS = `${LINK_PREFIX}git`;
export const GITOPS_REPO = 'lab-gitops.git';
/** uid/gid of `git` inside the server's private passwd; it exists nowhere else. */
const GIT_UID = 64123;
/** Inside the server's mount namespace the served folder is mounted here: git's home. */
const SERVED = '/srv';

export interface GitServerPaths {
  dir: string;
  hostKey: string;
  /** Private deploy key (ed25519, 0600) the repository accepts; `.pub` beside it. */
  deployKey: string;
  /** One line: the server's address and host key, as Flux's Secret `known_hosts` carries it. */
  knownHosts: string;
  config: string;
  passwd: string;
  group: string;
  /** Mounted on /srv in the server's mount namespace: authorized_keys, the serve script, the repository. */
  served: string;
  repo: string;
  log: string;
}

export function gitServerPaths(stateDir = paths.stateDir): GitServerPaths {
  const dir = join(stateDir, 'gitops-server');
  const served = join(dir, 'srv');
  return {
    dir,
    hostKey: join(dir, 'ssh_host_ed25519_key'),
    deployKey: join(dir, 'deploy_key'),
    knownHosts: join(dir, 'known_hosts'),
    config: join(dir, 'sshd_config'),
    passwd: join(dir, 'passwd'),
    group: join(dir, 'group'),
    served,
    repo: join(served, GITOPS_REPO),
    log: join(dir, 'sshd.log'),
  };
}

/** The URL a GitRepository names: `ssh://git@<address>/lab-gitops.git`. */
export const gitopsUrl = () => `ssh://git@${GIT_SERVER_ADDRESS}/${GITOPS_REPO}`;

export function sshdConfig(p: GitServerPaths): string {
  return [
    'Port 22',
    `HostKey ${p.hostKey}`,
    `PidFile ${join(p.dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${SERVED}/authorized_keys`,
    'AllowUsers git',
    'PermitRootLogin no',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    // No PAM: the machine's PAM stack knows no `git` user and must not be touched.
    'UsePAM no',
    // Whatever the client asks for, only git-upload-pack of the one repository runs (serve script).
    `ForceCommand ${SERVED}/git-serve`,
    'DisableForwarding yes',
    'PermitTTY no',
    'PrintMotd no',
    // Git's protocol v2 is negotiated through this variable.
    'AcceptEnv GIT_PROTOCOL',
    'LogLevel VERBOSE',
    '',
  ].join('\n');
}

/** The forced command: git-upload-pack of the served repository, for the paths a client may spell. */
export function serveScript(): string {
  const ok = [`/${GITOPS_REPO}`, `/${GITOPS_REPO}/`, GITOPS_REPO, `~/${GITOPS_REPO}`].map((p) => `"git-upload-pack '${p}'"`).join('|');
  return [
    '#!/bin/sh',
    '# Read-only: fetch and clone of the one repository; nothing else runs for the deploy key.',
    'case "$SSH_ORIGINAL_COMMAND" in',
    `  ${ok}) exec git-upload-pack ${SERVED}/${GITOPS_REPO} ;;`,
    `  *) echo "lab git server: only git-upload-pack of /${GITOPS_REPO} is served" >&2; exit 1 ;;`,
    'esac',
    '',
  ].join('\n');
}

/** The machine's passwd/group plus `git` (and sshd's privilege-separation user where the machine lacks it). */
export function privateAccounts(passwd: string, group: string): { passwd: string; group: string } {
  const lines = (t: string) => t.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('git:'));
  const pw = lines(passwd);
  const gr = lines(group);
  pw.push(`git:x:${GIT_UID}:${GIT_UID}:lab GitOps server:${SERVED}:/bin/sh`);
  gr.push(`git:x:${GIT_UID}:`);
  if (!pw.some((l) => l.startsWith('sshd:'))) pw.push('sshd:x:64124:65534::/run/sshd:/usr/sbin/nologin');
  return { passwd: `${pw.join('\n')}\n`, group: `${gr.join('\n')}\n` };
}

async function keygen(file: string, comment: string): Promise<void> {
  if (!existsSync(file)) await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
  chmodSync(file, 0o600);
}

const publicKey = (file: string) => readFileSync(`${file}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');

/** Keys (kept across `lab down`, like the operator key), config, accounts, and an empty repository. */
async function prepareGitServer(p = gitServerPaths()): Promise<void> {
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  mkdirSync(p.served, { recursive: true, mode: 0o755 });
  chmodSync(p.served, 0o755);
  await keygen(p.hostKey, 'bootstrap-lab-gitops-server');
  await keygen(p.deployKey, 'bootstrap-lab-deploy-key');
  writeFileSync(p.knownHosts, `${GIT_SERVER_ADDRESS} ${publicKey(p.hostKey)}\n`, { mode: 0o644 });
  writeFileSync(join(p.served, 'authorized_keys'), `restrict ${publicKey(p.deployKey)}\n`, { mode: 0o644 });
  writeFileSync(join(p.served, 'git-serve'), serveScript(), { mode: 0o755 });
  chmodSync(join(p.served, 'git-serve'), 0o755);
  writeFileSync(p.config, sshdConfig(p), { mode: 0o600 });
  const acc = privateAccounts(readFileSync('/etc/passwd', 'utf8'), readFileSync('/etc/group', 'utf8'));
  writeFileSync(p.passwd, acc.passwd, { mode: 0o644 });
  writeFileSync(p.group, acc.group, { mode: 0o644 });
  ensureServedRepo(p.repo);
}

/** The bare repository, created empty when missing, owned by the server's `git` user (it reads it as that user). */
export function ensureServedRepo(repo = gitServerPaths().repo): void {
  if (!existsSync(join(repo, 'HEAD'))) {
    mkdirSync(repo, { recursive: true });
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', repo]);
  }
  // Only root runs the server; a repository made by anyone else is not served.
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', `${GIT_UID}:${GIT_UID}`, repo]);
}

/** Its own namespace and NIC on the bridge (the bridge must exist). */
async function plugServer(): Promise<void> {
  const ip = (...a: string[]) => run('ip', a);
  if (!netnsExists(GIT_SERVER_NETNS)) await ip('netns', 'add', GIT_SERVER_NETNS);
  if ((await run('ip', ['link', 'show', GIT_SERVER_NETNS], { allowFail: true })).code !== 0) {
    await ip('link', 'add', GIT_SERVER_NETNS, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', GIT_SERVER_NETNS);
  }
  await ip('link', 'set', GIT_SERVER_NETNS, 'master', NET.bridge, 'up');
  await ip('-n', GIT_SERVER_NETNS, 'link', 'set', 'lo', 'up');
  await run('ip', ['-n', GIT_SERVER_NETNS, 'addr', 'replace', `${GIT_SERVER_ADDRESS}/${NET.prefix}`, 'dev', 'eth0']);
  await ip('-n', GIT_SERVER_NETNS, 'link', 'set', 'eth0', 'up');
}

/** The mounts that give sshd its private accounts, the served folder and a privilege-separation dir. */
function serverScript(p: GitServerPaths): string {
  return [
    'set -e',
    // sshd's privilege separation needs /run/sshd; a private /run leaves the machine's alone.
    'mount -t tmpfs -o mode=0755 lab-gitops-run /run',
    'mkdir -m 0755 /run/sshd',
    // The private accounts as an overlay on /etc, not a bind mount on /etc/passwd: the machine's useradd
    // replaces /etc/passwd by a rename, which detaches a file bind mount in every other mount namespace
    // (sshd then says "Invalid user git"); a directory mount point is never renamed.
    'mkdir -p /run/lab-etc/upper /run/lab-etc/work',
    `cp ${p.passwd} /run/lab-etc/upper/passwd`,
    `cp ${p.group} /run/lab-etc/upper/group`,
    'mount -t overlay lab-gitops-etc -o lowerdir=/etc,upperdir=/run/lab-etc/upper,workdir=/run/lab-etc/work /etc',
    `mount --bind ${p.served} ${SERVED}`,
    `exec /usr/sbin/sshd -D -e -f ${p.config}`,
  ].join('\n');
}

/** Asked from its own namespace: in the bastion shape the machine has no route to the hosts' segment it is on. */
async function gitServerRunning(): Promise<boolean> {
  return netnsPids(GIT_SERVER_NETNS).length > 0 && (await tcpOpenIn(GIT_SERVER_NETNS, GIT_SERVER_ADDRESS, 22, 1000));
}

/** Starts the server unless it answers already; returns once it accepts TCP on port 22. */
export async function startGitServer(p = gitServerPaths()): Promise<void> {
  if (await gitServerRunning()) return;
  if (!existsSync('/usr/sbin/sshd')) throw new Error("the lab git server needs the machine's OpenSSH server (apt-get install openssh-server)");
  if (!existsSync(SERVED)) throw new Error(`the lab git server mounts its repository on ${SERVED}, which this machine lacks`);
  await prepareGitServer(p);
  await plugServer();
  const out = openSync(p.log, 'a', 0o600);
  const child = spawn('ip', ['netns', 'exec', GIT_SERVER_NETNS, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', serverScript(p)], {
    detached: true,
    stdio: ['ignore', out, out],
  });
  child.unref();
  closeSync(out);
  if (!(await waitFor(() => tcpOpenIn(GIT_SERVER_NETNS, GIT_SERVER_ADDRESS, 22, 500), 15_000, 100))) {
    throw new Error(`the lab git server did not answer on ${GIT_SERVER_ADDRESS}:22 within 15 s (see ${p.log})`);
  }
}

/** The served repository goes with the lab (the keys stay, like the operator key); processes and links go with its namespace in `lab down`. */
export function removeServedRepo(p = gitServerPaths()): void {
  rmSync(p.repo, { recursive: true, force: true });
}

export interface GitServerStatus {
  running: boolean;
  address: string;
  url: string;
}

export async function gitServerStatus(): Promise<GitServerStatus> {
  return { running: await gitServerRunning(), address: GIT_SERVER_ADDRESS, url: gitopsUrl() };
}
