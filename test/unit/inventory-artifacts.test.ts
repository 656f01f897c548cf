// ARTIFACT_MISSING: files the inventory names, checked on this machine before any connection.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkArtifacts, fromText, type LoadedInventory } from '../../src/inventory/index.ts';

let root: string;
let loaded: LoadedInventory;

const touch = (rel: string) => {
  const path = join(root, rel);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, 'x');
  return path;
};

beforeEach(() => {
  // A repository-like layout: <root>/inventory/prod.yaml, <root>/artifacts, <root>/home-network, <root>/home.
  root = mkdtempSync(join(tmpdir(), 'inventory-artifacts-'));
  const text = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
  loaded = fromText(text, join(root, 'inventory/prod.yaml'), join(root, 'home'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const everything = () => {
  chmodSync(touch('artifacts/k3s/k3s'), 0o755);
  touch('artifacts/cilium-1.19.5.tgz');
  touch('artifacts/flux-install.yaml');
  touch('home-network/platform/cilium/helmrelease.yaml');
  touch('home/.config/bootstrap/prod-deploy-key');
  touch('home/.config/bootstrap/prod-gitops-known-hosts');
  touch('home/.ssh/id_ed25519');
};

const missing = () => checkArtifacts(loaded.derived).map((e) => ({ cause: e.causeId, message: e.message }));

describe('checkArtifacts', () => {
  it('finds nothing missing when every named file is there', () => {
    everything();
    expect(missing()).toEqual([]);
  });

  it('names every missing path at once, each as ARTIFACT_MISSING', () => {
    expect(missing()).toEqual([
      { cause: 'ARTIFACT_MISSING', message: `k3s.artifacts: ${join(root, 'artifacts/k3s')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `ssh.identityFile: ${join(root, 'home/.ssh/id_ed25519')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `gitops.checkout: ${join(root, 'home-network')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `cilium.chart: ${join(root, 'artifacts/cilium-1.19.5.tgz')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `flux.install: ${join(root, 'artifacts/flux-install.yaml')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `flux.deployKeyFile: ${join(root, 'home/.config/bootstrap/prod-deploy-key')} does not exist` },
      { cause: 'ARTIFACT_MISSING', message: `flux.knownHostsFile: ${join(root, 'home/.config/bootstrap/prod-gitops-known-hosts')} does not exist` },
    ]);
  });

  it('the k3s folder must hold a k3s file', () => {
    everything();
    rmSync(join(root, 'artifacts/k3s/k3s'));
    expect(missing()).toEqual([{ cause: 'ARTIFACT_MISSING', message: `k3s.artifacts (the k3s binary): ${join(root, 'artifacts/k3s/k3s')} does not exist` }]);
  });

  it('a file where a folder belongs (and the reverse) is named as such', () => {
    everything();
    rmSync(join(root, 'artifacts/cilium-1.19.5.tgz'));
    mkdirSync(join(root, 'artifacts/cilium-1.19.5.tgz'));
    expect(missing()).toEqual([{ cause: 'ARTIFACT_MISSING', message: `cilium.chart: ${join(root, 'artifacts/cilium-1.19.5.tgz')} is a folder, not a file` }]);
  });

  it('a checkout without the HelmRelease names the HelmRelease', () => {
    everything();
    rmSync(join(root, 'home-network/platform'), { recursive: true });
    expect(missing()).toEqual([
      {
        cause: 'ARTIFACT_MISSING',
        message: `cilium.helmRelease: ${join(root, 'home-network/platform/cilium/helmrelease.yaml')} does not exist`,
      },
    ]);
  });

  it('carries evidence an operator can rerun by hand', () => {
    const [first] = checkArtifacts(loaded.derived);
    expect(first.evidence).toEqual({
      command: `test -d ${join(root, 'artifacts/k3s')}`,
      exitCode: 1,
      seen: `${join(root, 'artifacts/k3s')} does not exist`,
    });
    expect(first.retryable).toBe(false);
  });

  it('checks only what the inventory names (no gitops, cilium, flux or identity file: nothing of theirs)', () => {
    const text = `
environment: lab
ssh: { user: ops }
k3s: { version: v1.33.5+k3s1, artifacts: ./k3s }
controlPlane: { vip: 10.0.0.9 }
network: { nodeCidr: 10.0.0.0/24 }
servers: [{ name: lab-1, address: 10.0.0.10, founder: true }]
`;
    const lab = fromText(text, join(root, 'lab.yaml'), join(root, 'home'));
    touch('k3s/k3s');
    expect(checkArtifacts(lab.derived)).toEqual([]);
  });

  it('takes an injected filesystem', () => {
    const seen: string[] = [];
    const dirs = [join(root, 'artifacts/k3s'), join(root, 'home-network')];
    const errors = checkArtifacts(loaded.derived, {
      kind: (path) => {
        seen.push(path);
        return dirs.includes(path) ? 'dir' : 'file';
      },
    });
    expect(errors).toEqual([]);
    expect(seen).toContain(join(root, 'artifacts/k3s/k3s'));
  });
});
