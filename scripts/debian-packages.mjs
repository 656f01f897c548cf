#!/usr/bin/env node
// The Debian packages the lab and the tests use, installed when missing, so that the README's two commands
// (`npm ci && npm run demo`, `npm test`) work on a fresh Debian machine as root; `.ci/run` calls it too.
// Elsewhere (not root, no apt-get) it names what is missing and leaves the decision to the operator: the
// lab and the root tests then say what they lack.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

// Real OpenSSH servers (test/ssh); debootstrap and e2fsprogs for the lab hosts' root filesystem;
// iproute2/nftables/iputils-ping for namespaces and faults; etcd (server, etcdctl) and git for the twins,
// mounted into the hosts off their PATH; git and sshd for the lab's GitOps server; openssl, faketime,
// procps, psmisc, util-linux for the twins and the lab's processes; chromium (headless) for the test that
// lays out a run report and measures what it draws (test/unit/report-browser.test.ts).
export const PACKAGES = [
  'openssh-server',
  'openssh-client',
  'git',
  'sudo',
  'debootstrap',
  'e2fsprogs',
  'iproute2',
  'nftables',
  'iputils-ping',
  'etcd-server',
  'etcd-client',
  'openssl',
  'faketime',
  'procps',
  'psmisc',
  'util-linux',
  'chromium',
];

function missing() {
  if (!existsSync('/usr/bin/dpkg-query')) return null;
  const res = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${db:Status-Abbrev}\n', ...PACKAGES], { encoding: 'utf8' });
  const installed = new Set(
    res.stdout
      .split('\n')
      .filter((l) => /^\S+ ii/.test(l))
      .map((l) => l.split(' ')[0]),
  );
  return PACKAGES.filter((p) => !installed.has(p));
}

const absent = missing();
if (absent === null) {
  process.stderr.write('debian-packages: not a Debian machine; the lab and root tests need: ' + PACKAGES.join(' ') + '\n');
} else if (absent.length) {
  if (process.getuid?.() !== 0) {
    process.stderr.write(`debian-packages: missing ${absent.join(' ')} (as root: apt-get install ${absent.join(' ')})\n`);
  } else {
    process.stdout.write(`debian-packages: installing ${absent.join(' ')}\n`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const run = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
    if (!run(['update', '-qq']) || !run(['install', '-y', '-qq', '--no-install-recommends', ...absent])) {
      process.stderr.write('debian-packages: apt-get failed (see above)\n');
      process.exit(1);
    }
  }
}
