// What the fetched kubeconfig tells an operator whose nodes sit behind a bastion: the tunnel to open and the
// kubectl command that dials its local end. Addresses and file names only, never a secret.
import { describe, expect, it } from 'vitest';
import { bastionAccess } from '../../src/kube/bastion-access.ts';
import { withAccessComment } from '../../src/k3s/kubeconfig-file.ts';

const input = (bastion: { user?: string; host: string; port?: number } | undefined, paths: { sshKnownHostsFile: string; sshIdentityFile?: string }) => ({
  inventory: { ssh: { user: 'ops', port: 22, knownHostsFile: '~/.ssh/known_hosts' } },
  derived: {
    bastion,
    apiEndpoint: { host: '192.168.2.9', port: 6443 },
    paths: { inventoryDir: '/inv', k3sArtifacts: '/a', k3sBinary: '/a/k3s', imageArchives: [], ...paths },
  },
  kubeconfig: '/home/me/.local/state/bootstrap/dev/kubeconfig',
  home: '/home/me',
});

describe('reaching the API behind a bastion', () => {
  it('without a bastion says nothing (the operator routes to the VIP)', () => {
    expect(bastionAccess(input(undefined, { sshKnownHostsFile: '/home/me/.ssh/known_hosts' }))).toBeUndefined();
  });

  it("names the tunnel through the bastion with the inventory's user, key and known_hosts, and the kubectl that dials it", () => {
    const a = bastionAccess(
      input({ user: 'jump', host: '192.168.2.1', port: 2222 }, { sshKnownHostsFile: '/keys/dev hosts', sshIdentityFile: '/keys/id_ed25519' }),
    )!;
    expect(a.tunnel).toBe("ssh -N -L 6443:192.168.2.9:6443 -i /keys/id_ed25519 -o 'UserKnownHostsFile=/keys/dev hosts' -p 2222 jump@192.168.2.1");
    expect(a.kubectl).toBe('kubectl --kubeconfig /home/me/.local/state/bootstrap/dev/kubeconfig --server https://127.0.0.1:6443 get nodes');
  });

  it("leaves out what ssh defaults to (the default known_hosts, no key, no port) and takes the inventory's user", () => {
    const a = bastionAccess(input({ host: 'pfsense' }, { sshKnownHostsFile: '/home/me/.ssh/known_hosts' }))!;
    expect(a.tunnel).toBe('ssh -N -L 6443:192.168.2.9:6443 ops@pfsense');
  });

  it('writes the instructions as comments on top of the kubeconfig, which stays the same YAML', () => {
    const a = bastionAccess(input({ host: 'pfsense' }, { sshKnownHostsFile: '/home/me/.ssh/known_hosts' }))!;
    const text = withAccessComment('apiVersion: v1\nkind: Config\n', a);
    expect(
      text
        .split('\n')
        .slice(0, 5)
        .every((l) => l.startsWith('# ')),
    ).toBe(true);
    expect(text).toContain('#   ssh -N -L 6443:192.168.2.9:6443 ops@pfsense\n');
    expect(text.endsWith('apiVersion: v1\nkind: Config\n')).toBe(true);
    expect(withAccessComment('apiVersion: v1\n', undefined)).toBe('apiVersion: v1\n');
  });
});
