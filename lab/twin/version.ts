// The release the twin claims (`k3s --version`, GET /version, the node's kubeletVersion, etcd's start line).
// The engine compares the version with what it meant to install. The release is fixed when the bundle is
// built (./built-release.ts).
import { RELEASE } from './built-release.ts';

export { RELEASE };
export const K3S_VERSION = RELEASE.version;
export const K3S_COMMIT = RELEASE.commit;

export function kubeVersion() {
  const m = /^v(\d+)\.(\d+)\.(\d+)/.exec(K3S_VERSION) ?? ['', '1', '32', '5'];
  return {
    major: m[1],
    minor: m[2],
    gitVersion: K3S_VERSION,
    gitCommit: K3S_COMMIT,
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: RELEASE.go,
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}
