// The add-on image archives of the lab (`lab up` writes them into the artifacts folder and the lab inventory
// names them in k3s.imageArchives): OCI image layouts shaped as `ctr images export` / `skopeo copy
// oci-archive:` write them (oci-layout, index.json naming each image with io.containerd.image.name, the
// manifest and config blobs), for the images the lab's add-ons pull: kube-vip, the Cilium chart's images
// with the digests it pins, Flux's four controllers, and the image of the GitOps fixture's workload
// (platform/demo: the pause image). No layer content: the twin runs no image. A pinned
// image's manifest blob is stored under the pinned digest, which its stand-in content does not hash to
// (only the index is read, by the engine's check and by the twin's import).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDefaults, ciliumImages, coalesce } from '../src/images/required.ts';
import { KUBE_VIP_IMAGE } from '../src/images/pins.ts';
import { parseImageRef } from '../src/images/ref.ts';
import { FLUX_CONTROLLERS } from './flux-install.ts';
import { labChartPath } from './cilium-chart.ts';
import { paths } from './config.ts';
import { GITOPS_FIXTURE } from './gitops-inventory.ts';

export const LAB_IMAGE_ARCHIVES = ['kube-vip-images.tar', 'cilium-images.tar', 'flux-images.tar', 'workload-images.tar'] as const;

/** The image of the GitOps fixture's Deployment `demo/web` (test/fixtures/gitops/platform/demo/deployment.yaml). */
export const LAB_WORKLOAD_IMAGES = ['registry.k8s.io/pause:3.10'];

const sha = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

function tarEntry(name: string, data: Buffer): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\0', 257);
  h.write('00', 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return Buffer.concat([h, data, Buffer.alloc(Math.ceil(data.length / 512) * 512 - data.length)]);
}

/** A tar of these files, in this order. */
export function tarOf(files: [string, Buffer | string][]): Buffer {
  return Buffer.concat([...files.map(([n, d]) => tarEntry(n, Buffer.isBuffer(d) ? d : Buffer.from(d))), Buffer.alloc(1024)]);
}

/** An OCI image layout tar naming these images (`repository:tag[@digest]`). */
export function ociArchive(refs: string[]): Buffer {
  const files: [string, Buffer | string][] = [['oci-layout', '{"imageLayoutVersion":"1.0.0"}']];
  const manifests: any[] = [];
  for (const ref of refs) {
    const r = parseImageRef(ref);
    const config = JSON.stringify({ architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: [] } });
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha(config), size: config.length },
      layers: [],
    });
    const digest = r.digest ?? sha(manifest);
    files.push([`blobs/sha256/${sha(config).slice(7)}`, config], [`blobs/sha256/${digest.slice(7)}`, manifest]);
    const name = `${r.repository}:${r.tag ?? 'latest'}`;
    manifests.push({
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest,
      size: manifest.length,
      annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': r.tag ?? 'latest' },
    });
  }
  files.push(['index.json', JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests })]);
  return tarOf(files);
}

/** A `docker save` tar of these tags (manifest.json with RepoTags; no registry digest survives). */
export function dockerSaveArchive(tags: string[]): Buffer {
  const config = JSON.stringify({ architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: [] } });
  const id = sha(config).slice(7);
  return tarOf([
    [`${id}.json`, config],
    ['manifest.json', JSON.stringify([{ Config: `${id}.json`, RepoTags: tags, Layers: [] }])],
  ]);
}

/** The images the lab's Cilium pulls: the chart's, under the GitOps fixture's HelmRelease values. */
export function labCiliumImages(): string[] {
  const chart = labChartPath(paths);
  if (!existsSync(chart)) return [];
  const hr = parse(readFileSync(join(GITOPS_FIXTURE, 'platform', 'cilium', 'helmrelease.yaml'), 'utf8'));
  return ciliumImages(coalesce(chartDefaults(readFileSync(chart)), hr?.spec?.values ?? {})).map((i) => i.image);
}

export const labFluxImages = () => Object.entries(FLUX_CONTROLLERS).map(([name, tag]) => `ghcr.io/fluxcd/${name}:${tag}`);

/** Writes the lab's archives into the artifacts folder; returns their paths. */
export function writeImageArchives(artifactsDir: string): string[] {
  const contents: Record<(typeof LAB_IMAGE_ARCHIVES)[number], string[]> = {
    'kube-vip-images.tar': [KUBE_VIP_IMAGE],
    'cilium-images.tar': labCiliumImages(),
    'flux-images.tar': labFluxImages(),
    'workload-images.tar': LAB_WORKLOAD_IMAGES,
  };
  return LAB_IMAGE_ARCHIVES.map((name) => {
    const file = join(artifactsDir, name);
    const data = ociArchive(contents[name]);
    // Unchanged bytes keep the file's mtime: k3s (and its twin) import a file again only when it changes.
    if (!existsSync(file) || !readFileSync(file).equals(data)) writeFileSync(file, data);
    return file;
  });
}
