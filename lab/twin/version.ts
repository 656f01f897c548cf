// The version the lab's k3s claims (`k3s --version`, GET /version). The engine compares it with what it
// meant to install, so it is one constant; K3S_TWIN_VERSION overrides it for tests of version handling.
export const K3S_VERSION = process.env.K3S_TWIN_VERSION ?? 'v1.33.5+k3s1';
export const K3S_COMMIT = '8e8f2a47';

export function kubeVersion() {
  const m = /^v(\d+)\.(\d+)\.(\d+)/.exec(K3S_VERSION) ?? ['', '1', '32', '5'];
  return {
    major: m[1],
    minor: m[2],
    gitVersion: K3S_VERSION,
    gitCommit: K3S_COMMIT,
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.23.8',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}
