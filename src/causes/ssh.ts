import { defineCauses } from './define.ts';

// Connecting to hosts: reachability, host keys, authentication, sudo (src/transport/ssh.ts).
// Order: as an operator meets them on first contact with a host.
export const sshCauses = defineCauses({
  SSH_UNREACHABLE: {
    title: 'The host does not answer on its SSH port',
    meaning:
      'The TCP connection to the SSH port was refused or timed out (host down, wrong address, firewall), or the open connection was lost while a command ran (the host went down or off the network: it stopped answering the SSH keepalives).',
    remedy:
      'Check the host is powered on and reachable and the address and port in the inventory are right (a name must resolve on this machine; behind ssh.bastion, the jump host must reach the address); try `ssh -v` by hand; then rerun the same command (every step is idempotent).',
  },
  SSH_HANDSHAKE_FAILED: {
    title: 'The host answered, but the SSH handshake failed',
    meaning:
      'Something listens on the port but the SSH protocol exchange broke off: not an SSH server, no algorithm in common, or the server closed the connection (MaxStartups, a firewall, a host that is shutting down).',
    remedy: 'Run `ssh -v -p PORT USER@ADDRESS true` by hand and read where it stops; check the server log (`journalctl -u ssh`).',
  },
  HOST_KEY_UNKNOWN: {
    title: 'The host key is not in known_hosts',
    meaning:
      'This is the first contact with the host (or it was reinstalled and its line removed). The tool never trusts a key on first use: the operator checks the fingerprint and records it.',
    remedy:
      "Compare the fingerprint shown with the host's own (on its console: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), then add it with the `ssh-keyscan` command shown.",
  },
  HOST_KEY_MISMATCH: {
    title: 'The host key differs from the one recorded in known_hosts',
    meaning:
      'The host presented a different key than the one recorded for it: the host was reinstalled, the address now belongs to another machine, or someone is in the middle. Never retried, never accepted.',
    remedy:
      "Find out why the key changed. Only if the change is expected: `ssh-keygen -R HOST -f KNOWN_HOSTS`, check the new fingerprint on the host's console, and add it again.",
  },
  SSH_IDENTITY_UNUSABLE: {
    title: 'The SSH identity file cannot be used',
    meaning: 'The identityFile named (inventory or ~/.ssh/config) is missing, unreadable, not a private key, or protected by a passphrase.',
    remedy:
      'Fix the path (ssh.identityFile, or IdentityFile in ~/.ssh/config), or load a passphrase-protected key into the ssh-agent (`ssh-add FILE`) and leave identityFile unset.',
  },
  SSH_CONFIG_UNREADABLE: {
    title: 'A file of the SSH client setup cannot be read',
    meaning:
      '~/.ssh/config (or $BOOTSTRAP_SSH_CONFIG), a file its Include lines name, or the known_hosts file in use is a FIFO, socket, device or folder, or cannot be read. A FIFO or device is refused before a byte is read (reading it could block the run forever). No host was contacted.',
    remedy: 'Make the named path a regular file (or remove it: a missing ~/.ssh/config is an empty one), or point BOOTSTRAP_SSH_CONFIG at a regular file.',
  },
  SSH_AUTH_FAILED: {
    title: 'The host refused the SSH login',
    meaning:
      'The host key was verified, but no offered key was accepted for the user (wrong user, key not in authorized_keys, no identity available). Never retried.',
    remedy: 'Check `ssh.user` and the identity; install the public key on the host (`ssh-copy-id -i KEY.pub USER@HOST`).',
  },
  SUDO_NEEDS_PASSWORD: {
    title: 'sudo asks the SSH user for a password',
    meaning:
      'Commands that need root run through `sudo -n`, which cannot answer a password prompt; sudo refused (a run: its first command through sudo, the host lock; a --check or a replace: `sudo -n true` on each connection).',
    remedy: 'Give the user passwordless sudo on the host: `echo "USER ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/USER` (mode 0440, check with `visudo -c`).',
  },
  SSH_FORWARD_FAILED: {
    title: 'The host refused to open a TCP stream through SSH',
    meaning:
      'A tunnel (ssh direct-tcpip) to an address and port as seen from the host was refused: nothing listens there yet, or sshd forbids forwarding (AllowTcpForwarding no).',
    remedy: 'On the host, check the port listens (`ss -tlnp`) and that sshd allows TCP forwarding (`sudo sshd -T | grep allowtcpforwarding`).',
  },
});
