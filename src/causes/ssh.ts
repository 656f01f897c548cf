import { defineCauses } from './define.ts';

// Connecting to hosts: reachability, host keys, authentication, sudo (src/transport/ssh.ts).
export const sshCauses = defineCauses({
  SSH_UNREACHABLE: {
    title: 'The host does not answer on its SSH port',
    meaning: 'The TCP connection to the SSH port was refused or timed out (host down, wrong address, firewall).',
    remedy: 'Check the host is powered on and the address and port in the inventory are right; try `ssh -v` by hand.',
  },
});
