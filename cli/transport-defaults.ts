// The real side effects a run uses by default: SSH to the hosts, honouring ~/.ssh/config.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { HostRef } from '../src/engine/phase.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { loadSshConfig, type SshConfig } from '../src/transport/ssh-config.ts';
import { SshTransport } from '../src/transport/ssh.ts';
import { checkSudo } from '../src/transport/sudo.ts';
import { defaultTargetEnv, resolveSshTarget } from '../src/transport/target.ts';
import type { Remote, SshTarget, Transport } from '../src/transport/types.ts';

export function operatorSshConfig(env: NodeJS.ProcessEnv = process.env): SshConfig {
  return loadSshConfig(env.BOOTSTRAP_SSH_CONFIG ?? join(homedir(), '.ssh', 'config'));
}

export function defaultTransport(config: SshConfig = operatorSshConfig()): Transport {
  return new SshTransport({ sshConfig: config });
}

/** Every connection is checked for passwordless sudo before the run uses it (SUDO_NEEDS_PASSWORD). */
export async function defaultPreflight(remote: Remote): Promise<void> {
  await checkSudo(remote);
}

/**
 * Where and how to reach a host: what the inventory says wins, ~/.ssh/config fills the rest. The
 * inventory's defaults (port 22, ~/.ssh/known_hosts) count as unset so that a Host block's Port or
 * UserKnownHostsFile still applies.
 */
export function sshTarget(loaded: LoadedInventory, host: HostRef, config: SshConfig = operatorSshConfig()): SshTarget {
  const { ssh } = loaded.inventory;
  return resolveSshTarget(
    {
      name: host.name,
      address: host.address,
      user: ssh.user,
      port: ssh.port === 22 ? undefined : ssh.port,
      identityFile: loaded.derived.paths.sshIdentityFile,
      knownHostsFile: ssh.knownHostsFile === '~/.ssh/known_hosts' ? undefined : loaded.derived.paths.sshKnownHostsFile,
      bastion: ssh.bastion,
    },
    defaultTargetEnv(config),
  );
}
