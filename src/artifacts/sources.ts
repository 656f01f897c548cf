// What `bootstrap artifacts` downloads for an inventory, from where, and what verifies it. The upstream
// release locations (each base overridable, for a mirror or the tests' local server):
//   k3s:    k3s-io/k3s GitHub releases, <base>/<version>/{k3s, k3s-arm64, k3s-airgap-images-<arch>.tar.zst},
//           every asset's sha256 in the release's sha256sum-<arch>.txt (what k3s's install.sh checks against)
//   Cilium: the Helm repository https://helm.cilium.io/, <base>/cilium-<version>.tgz, its sha256 the
//           `digest` of that version's entry in <base>/index.yaml (Helm's repository index)
//   Flux:   fluxcd/flux2 GitHub releases, <base>/<version>/install.yaml. Flux publishes no sha256 for it
//           (fluxcd/flux2 .goreleaser.yml: install.yaml is a release extra file, and
//           flux_<v>_checksums.txt lists the CLI archives only), so it is verified only against
//           flux.installSha256 when the inventory pins one; otherwise its computed sha256 is shown, unverified.
//   Image archives: built by the operator (skopeo), downloaded only from a `url` the inventory gives.
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { LoadedInventory } from '../inventory/load.ts';

export interface Sources {
  k3s: string;
  cilium: string;
  flux: string;
}

const UPSTREAM: Sources = {
  k3s: 'https://github.com/k3s-io/k3s/releases/download',
  cilium: 'https://helm.cilium.io',
  flux: 'https://github.com/fluxcd/flux2/releases/download',
};

/** The environment variables that replace each upstream base (a mirror laid out like the upstream). */
const SOURCE_ENV = { k3s: 'BOOTSTRAP_K3S_RELEASES', cilium: 'BOOTSTRAP_CILIUM_CHARTS', flux: 'BOOTSTRAP_FLUX_RELEASES' } as const;

export function sourcesFrom(env: NodeJS.ProcessEnv): Sources {
  const pick = (k: keyof Sources) => (env[SOURCE_ENV[k]]?.trim() || UPSTREAM[k]).replace(/\/+$/, '');
  return { k3s: pick('k3s'), cilium: pick('cilium'), flux: pick('flux') };
}

export type Arch = 'amd64' | 'arm64';

/** What a download's bytes are checked against. */
export type Checksum =
  | { kind: 'list'; url: string; name: string }
  | { kind: 'helm-index'; url: string; chart: string; version: string }
  | { kind: 'pinned'; sha256: string; key: string }
  | { kind: 'none'; why: string };

export interface Artifact {
  /** The inventory key (and what it is), for messages. */
  key: string;
  /** Where it goes (absolute). */
  path: string;
  mode: number;
  /** Where it is downloaded from; absent when bootstrap cannot download it (noSource says what to do). */
  url?: string;
  checksum: Checksum;
  noSource?: { seen: string; command: string };
}

const CHART_NAME = /^cilium-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)\.tgz$/;
const AIRGAP = (arch: Arch) => new RegExp(`^k3s-airgap-images-${arch}\\.tar(\\.zst|\\.gz)?$`);

/** The artifacts an inventory names, in the order a build needs them. */
export function artifactsOf(loaded: LoadedInventory, sources: Sources, arch: Arch = 'amd64'): Artifact[] {
  const inv = loaded.inventory;
  const p = loaded.derived.paths;
  const k3sBase = `${sources.k3s}/${encodeURIComponent(inv.k3s.version)}`;
  const k3sList = (name: string): Checksum => ({ kind: 'list', url: `${k3sBase}/sha256sum-${arch}.txt`, name });
  const binaryAsset = arch === 'amd64' ? 'k3s' : `k3s-${arch}`;
  // An images tarball already there in another compression is the one the build uploads: keep it.
  const airgap = existingName(p.k3sArtifacts, AIRGAP(arch)) ?? `k3s-airgap-images-${arch}.tar.zst`;
  const out: Artifact[] = [
    { key: 'k3s.artifacts: the k3s binary', path: p.k3sBinary, mode: 0o755, url: `${k3sBase}/${binaryAsset}`, checksum: k3sList(binaryAsset) },
    { key: 'k3s.artifacts: the air-gap images', path: join(p.k3sArtifacts, airgap), mode: 0o644, url: `${k3sBase}/${airgap}`, checksum: k3sList(airgap) },
  ];
  if (p.ciliumChart) out.push(ciliumChart(p.ciliumChart, sources));
  if (inv.flux && p.fluxInstall) out.push(fluxInstall(p.fluxInstall, inv.flux, sources));
  inv.k3s.imageArchives.forEach((a, i) => out.push(imageArchive(`k3s.imageArchives[${i}]`, p.imageArchives[i].path, a)));
  return out;
}

function ciliumChart(path: string, sources: Sources): Artifact {
  const key = 'cilium.chart';
  const version = CHART_NAME.exec(basename(path))?.[1];
  if (!version) {
    return {
      key,
      path,
      mode: 0o644,
      checksum: { kind: 'none', why: 'no version' },
      noSource: {
        seen: `${basename(path)} does not say which Cilium version it is (Helm names the chart cilium-<version>.tgz)`,
        command: `cilium.chart: ${join(dirname(path), 'cilium-<version>.tgz')}   # the version the HelmRelease pins; then: bootstrap artifacts <env>`,
      },
    };
  }
  return {
    key,
    path,
    mode: 0o644,
    url: `${sources.cilium}/cilium-${version}.tgz`,
    checksum: { kind: 'helm-index', url: `${sources.cilium}/index.yaml`, chart: 'cilium', version },
  };
}

function fluxInstall(path: string, flux: { version?: string; installSha256?: string }, sources: Sources): Artifact {
  const key = 'flux.install';
  const checksum: Checksum = flux.installSha256
    ? { kind: 'pinned', sha256: flux.installSha256, key: 'flux.installSha256' }
    : { kind: 'none', why: 'Flux publishes no sha256 for install.yaml; pin one as flux.installSha256' };
  if (!flux.version) {
    return {
      key,
      path,
      mode: 0o644,
      checksum,
      noSource: {
        seen: 'the inventory names no Flux release (flux.version), so which install.yaml is not known',
        command: `flux: { version: v2.x.y, … }   # in the inventory; or: flux install --export > ${path}`,
      },
    };
  }
  return { key, path, mode: 0o644, url: `${sources.flux}/${flux.version}/install.yaml`, checksum };
}

function imageArchive(key: string, path: string, a: { url?: string; sha256?: string }): Artifact {
  const checksum: Checksum = a.sha256 ? { kind: 'pinned', sha256: a.sha256, key: `${key}.sha256` } : { kind: 'none', why: `no sha256 in ${key}` };
  if (a.url) return { key, path, mode: 0o644, url: a.url, checksum };
  return {
    key,
    path,
    mode: 0o644,
    checksum,
    noSource: {
      seen: `${key} has no url: image archives are built by the operator, not downloaded from a release`,
      command: `skopeo copy --all docker://<image> oci-archive:${path}:<repository:tag>   # per image; bootstrap <env> --check names the images missing (IMAGE_NOT_IN_ARCHIVES)`,
    },
  };
}

function existingName(dir: string, pattern: RegExp): string | undefined {
  try {
    return readdirSync(dir)
      .filter((f) => pattern.test(f))
      .sort()[0];
  } catch {
    return undefined;
  }
}
