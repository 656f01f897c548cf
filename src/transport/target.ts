// Where a host is and how to reach it: the inventory's values, completed from ~/.ssh/config.
//
// Precedence (what an operator expects): a value written in the inventory wins; ~/.ssh/config fills only
// what the inventory leaves unset; then ssh's own defaults (port 22, the local user name,
// ~/.ssh/known_hosts). The inventory is the reviewed, shared description of the environment, while
// ~/.ssh/config is one operator's machine: it may supply a personal identity file, a user or a jump host,
// but it must not silently move a host the inventory names to another address. So `HostName` only
// applies where the name is not already an address the inventory gave: jump hosts (`ssh.bastion: jump`
// or a ProxyJump), which are looked up the way `ssh` looks up what is typed on its command line.
import { homedir, userInfo } from 'node:os';
import type { SshTarget } from './types.ts';
import { EMPTY_SSH_CONFIG, expandPath, lookupHost, type SshConfig } from './ssh-config.ts';

/** A host as the inventory describes it: unset fields are undefined (not defaulted yet). */
export interface SshTargetInput {
  name: string;
  address: string;
  user?: string;
  port?: number;
  identityFile?: string;
  knownHostsFile?: string;
  /** `[user@]host[:port]`, or a comma-separated chain of them (ProxyJump syntax). */
  bastion?: string;
}

export interface TargetEnv {
  config: SshConfig;
  home: string;
  localUser: string;
}

export function defaultTargetEnv(config: SshConfig = EMPTY_SSH_CONFIG): TargetEnv {
  return { config, home: homedir(), localUser: safeLocalUser() };
}

function safeLocalUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'root';
  }
}

/** Resolve an inventory host: inventory values first, then ~/.ssh/config (by name, then address), then defaults. */
export function resolveSshTarget(input: SshTargetInput, env: TargetEnv): SshTarget {
  const opts = lookupHost(env.config, [input.name, input.address]);
  const port = input.port ?? opts.port ?? 22;
  const user = input.user ?? opts.user ?? env.localUser;
  const tokens = { home: env.home, host: input.address, port, user, localUser: env.localUser, alias: input.name };
  const identity = input.identityFile ?? opts.identityFiles[0];
  const knownHosts = input.knownHostsFile ?? opts.userKnownHostsFile ?? '~/.ssh/known_hosts';
  const jump = input.bastion ?? opts.proxyJump;
  return {
    name: input.name,
    address: input.address,
    port,
    user,
    identityFile: identity === undefined ? undefined : expandPath(identity, tokens),
    knownHostsFile: expandPath(knownHosts, tokens),
    bastion: jump === undefined || jump.toLowerCase() === 'none' ? undefined : jump,
  };
}

/** One hop of a jump chain as written: `[ssh://][user@]host[:port]` (IPv6 as `[addr]:port`). */
export interface JumpSpec {
  user?: string;
  host: string;
  port?: number;
}

export function parseJumpSpec(spec: string): JumpSpec {
  let s = spec.trim().replace(/^ssh:\/\//, '');
  let user: string | undefined;
  const at = s.lastIndexOf('@');
  if (at >= 0) {
    user = s.slice(0, at);
    s = s.slice(at + 1);
  }
  let host = s;
  let port: number | undefined;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) {
    host = v6[1];
    port = v6[2] === undefined ? undefined : Number(v6[2]);
  } else {
    const m = /^([^:]+):(\d+)$/.exec(s);
    if (m) {
      host = m[1];
      port = Number(m[2]);
    }
  }
  if (host === '' || (port !== undefined && !(port > 0 && port < 65536))) {
    throw new Error(`not a jump host: ${JSON.stringify(spec)} (expected [user@]host[:port])`);
  }
  return { user: user || undefined, host, port };
}

/**
 * The SshTarget of the last hop of a jump chain (`a,b` means: reach b through a). The hop's own
 * ~/.ssh/config entry supplies HostName/User/Port/IdentityFile/ProxyJump; what it leaves unset comes from
 * the host being reached through it (`via`: its user, identity and known_hosts file).
 */
export function resolveJumpHost(chain: string, via: SshTarget, env: TargetEnv): SshTarget {
  const hops = chain
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const last = hops.pop();
  if (last === undefined) throw new Error(`empty jump host chain: ${JSON.stringify(chain)}`);
  const spec = parseJumpSpec(last);
  const opts = lookupHost(env.config, [spec.host]);
  const port = spec.port ?? opts.port ?? 22;
  const user = spec.user ?? opts.user ?? via.user;
  const address = opts.hostName === undefined ? spec.host : expandPath(opts.hostName, { home: env.home, host: spec.host });
  const tokens = { home: env.home, host: address, port, user, localUser: env.localUser, alias: spec.host };
  const identity = opts.identityFiles[0];
  const before = hops.length > 0 ? hops.join(',') : opts.proxyJump;
  return {
    name: spec.host,
    address,
    port,
    user,
    identityFile: identity === undefined ? via.identityFile : expandPath(identity, tokens),
    knownHostsFile: via.knownHostsFile,
    bastion: before === undefined || before.toLowerCase() === 'none' ? undefined : before,
  };
}
