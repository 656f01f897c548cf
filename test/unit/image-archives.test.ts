// Image archives as the engine reads them before any change and as the twin imports them: the index of an
// OCI layout or a docker save tar (plain, gzip), the CRI's lookup rule (a pinned digest needs an OCI
// image with exactly that digest), the images the add-ons pull, and the named causes.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LAB_WORKLOAD_IMAGES, dockerSaveArchive, labFluxImages, ociArchive, tarOf } from '../../lab/image-archives.ts';
import { missingImageStops, readArchives } from '../../src/images/check.ts';
import { chartImage, ciliumImages, coalesce, manifestImages } from '../../src/images/required.ts';
import { readArchiveIndex } from '../../src/images/archive.ts';
import { matchImage } from '../../src/images/match.ts';
import { parseImageRef } from '../../src/images/ref.ts';
import { createHash } from 'node:crypto';

const DIGEST = `sha256:${'2'.repeat(64)}`;
const CILIUM = `quay.io/cilium/cilium:v1.19.5@${DIGEST}`;
const dir = mkdtempSync(join(tmpdir(), 'image-archives-'));
const put = (name: string, data: Buffer | string) => {
  const f = join(dir, name);
  writeFileSync(f, data);
  return f;
};

describe('image references', () => {
  it('normalise as containerd does: short names on docker.io/library, :latest when neither tag nor digest', () => {
    expect(parseImageRef('nginx')).toEqual({ repository: 'docker.io/library/nginx', tag: 'latest', digest: undefined });
    expect(parseImageRef('fluxcd/x:1')).toEqual({ repository: 'docker.io/fluxcd/x', tag: '1', digest: undefined });
    expect(parseImageRef('localhost:5000/a/b')).toEqual({ repository: 'localhost:5000/a/b', tag: 'latest', digest: undefined });
    expect(parseImageRef(CILIUM)).toEqual({ repository: 'quay.io/cilium/cilium', tag: 'v1.19.5', digest: DIGEST });
  });
});

describe('archive index', () => {
  it('an OCI layout names each image with the digest it keeps; a docker save archive its tags only', async () => {
    expect(await readArchiveIndex(put('cilium.tar', ociArchive([CILIUM, 'ghcr.io/kube-vip/kube-vip:v0.9.2'])))).toEqual({
      format: 'oci',
      images: [
        { name: 'quay.io/cilium/cilium:v1.19.5', digest: DIGEST },
        { name: 'ghcr.io/kube-vip/kube-vip:v0.9.2', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
      ],
    });
    expect(await readArchiveIndex(put('saved.tar', dockerSaveArchive(['quay.io/cilium/cilium:v1.19.5'])))).toEqual({
      format: 'docker',
      images: [{ name: 'quay.io/cilium/cilium:v1.19.5' }],
    });
  });

  it('reads a gzip-compressed archive, and a plain one whose index comes after large blobs without reading them', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    const tar = tarOf([
      ['blobs/sha256/' + 'a'.repeat(64), big],
      ['oci-layout', '{}'],
      ['./index.json', JSON.stringify({ manifests: [{ digest: DIGEST, annotations: { 'io.containerd.image.name': 'quay.io/cilium/cilium:v1.19.5' } }] })],
    ]);
    for (const name of ['late.tar', 'late.tar.gz']) {
      const idx = await readArchiveIndex(put(name, name.endsWith('.gz') ? gzipSync(tar) : tar));
      expect(idx.images).toEqual([{ name: 'quay.io/cilium/cilium:v1.19.5', digest: DIGEST }]);
    }
  });

  it('refuses what is no image archive, saying why', async () => {
    await expect(readArchiveIndex(put('notes.tar', 'not a tar at all'.repeat(100)))).rejects.toThrow('it is not a tar archive');
    await expect(readArchiveIndex(put('empty.tar', tarOf([['README', 'hello']])))).rejects.toThrow(
      'neither index.json (an OCI image layout) nor manifest.json (docker save)',
    );
    await expect(readArchiveIndex(put('images.zip', 'x'))).rejects.toThrow('k3s imports only .tar');
  });
});

describe('the CRI lookup', () => {
  const oci = [{ name: 'quay.io/cilium/cilium:v1.19.5', digest: DIGEST }];
  it('a pinned reference needs exactly its digest; the tag alone does not do', () => {
    expect(matchImage(CILIUM, oci)).toEqual({ kind: 'found' });
    expect(matchImage(`quay.io/cilium/cilium@${DIGEST}`, oci)).toEqual({ kind: 'found' });
    expect(matchImage(CILIUM, [{ name: 'quay.io/cilium/cilium:v1.19.5' }])).toEqual({
      kind: 'digest-differs',
      name: 'quay.io/cilium/cilium:v1.19.5',
      digest: undefined,
    });
    expect(matchImage(CILIUM.replace(DIGEST, `sha256:${'3'.repeat(64)}`), oci).kind).toBe('digest-differs');
  });
  it('a tagged reference needs the repository and tag', () => {
    expect(matchImage('quay.io/cilium/cilium:v1.19.5', oci)).toEqual({ kind: 'found' });
    expect(matchImage('quay.io/cilium/cilium:v1.19.4', oci)).toEqual({ kind: 'absent' });
    expect(matchImage('nginx', [{ name: 'docker.io/library/nginx:latest' }])).toEqual({ kind: 'found' });
  });
});

describe('what the add-ons pull', () => {
  it("Cilium: the chart's images with the digests it pins, envoy and Hubble when enabled", () => {
    const v = coalesce(
      {
        image: { repository: 'quay.io/cilium/cilium', tag: 'v1.19.5', digest: 'sha256:a', useDigest: true },
        operator: {
          image: { repository: 'quay.io/cilium/operator', tag: 'v1.19.5', genericDigest: 'sha256:g', awsDigest: 'sha256:w', useDigest: true, suffix: '' },
        },
        envoy: { image: { repository: 'quay.io/cilium/cilium-envoy', tag: 'v1.36', digest: 'sha256:e', useDigest: true } },
        l7Proxy: true,
        hubble: { enabled: true, relay: { enabled: false, image: {} }, ui: { enabled: false } },
      },
      { hubble: { relay: { enabled: true, image: { repository: 'quay.io/cilium/hubble-relay', tag: 'v1.19.5', useDigest: false } } } },
    );
    expect(ciliumImages(v)).toEqual([
      { image: 'quay.io/cilium/cilium:v1.19.5@sha256:a', by: 'Cilium agent' },
      { image: 'quay.io/cilium/operator-generic:v1.19.5@sha256:g', by: 'Cilium operator' },
      { image: 'quay.io/cilium/cilium-envoy:v1.36@sha256:e', by: 'Cilium envoy' },
      { image: 'quay.io/cilium/hubble-relay:v1.19.5', by: 'Hubble relay' },
    ]);
    expect(ciliumImages({ ...v, l7Proxy: false, eni: { enabled: true } }).map((i) => i.image)).toEqual([
      'quay.io/cilium/cilium:v1.19.5@sha256:a',
      'quay.io/cilium/operator-aws:v1.19.5@sha256:w',
      'quay.io/cilium/hubble-relay:v1.19.5',
    ]);
    expect(chartImage({ override: 'my/own:1', repository: 'x' })).toBe('my/own:1');
  });

  it("Flux: every container of the install manifest's workloads", () => {
    const text =
      labFluxImages()
        .map(
          (image, i) =>
            `---\napiVersion: apps/v1\nkind: Deployment\nmetadata: { name: c${i} }\nspec: { template: { spec: { containers: [{ name: manager, image: "${image}" }] } } }\n`,
        )
        .join('') + '---\nkind: Service\nmetadata: { name: s }\n';
    expect(manifestImages(text, (w) => `Flux ${w}`).map((i) => i.image)).toEqual([
      'ghcr.io/fluxcd/source-controller:v1.9.0',
      'ghcr.io/fluxcd/kustomize-controller:v1.9.0',
      'ghcr.io/fluxcd/helm-controller:v1.6.0',
      'ghcr.io/fluxcd/notification-controller:v1.9.0',
    ]);
  });

  it("the lab's workload archive holds every image of the GitOps fixture's workload (platform/demo)", () => {
    const text = readFileSync(fileURLToPath(new URL('../fixtures/gitops/platform/demo/deployment.yaml', import.meta.url)), 'utf8');
    expect(manifestImages(text, (w) => w).map((i) => i.image)).toEqual(LAB_WORKLOAD_IMAGES);
  });
});

describe('the check before any change', () => {
  it('IMAGE_NOT_IN_ARCHIVES names the image, who pulls it, and why a docker save archive does not do', async () => {
    const { read, stops } = await readArchives([
      { path: put('kv.tar', ociArchive(['ghcr.io/kube-vip/kube-vip:v0.9.2'])) },
      { path: put('cilium-saved.tar', dockerSaveArchive(['quay.io/cilium/cilium:v1.19.5'])) },
    ]);
    expect(stops).toEqual([]);
    const required = [
      { image: 'ghcr.io/kube-vip/kube-vip:v0.9.2', by: 'kube-vip' },
      { image: CILIUM, by: 'Cilium agent' },
      { image: 'ghcr.io/fluxcd/source-controller:v1.9.0', by: 'Flux source-controller' },
    ];
    expect(missingImageStops(required, read).map((c) => [c.causeId, c.message])).toEqual([
      [
        'IMAGE_NOT_IN_ARCHIVES',
        `Cilium agent pulls ${CILIUM}; cilium-saved.tar has quay.io/cilium/cilium:v1.19.5 as a docker save archive, which keeps tags only: containerd gives the imported image a digest of its own, so the pinned digest is found nowhere`,
      ],
      [
        'IMAGE_NOT_IN_ARCHIVES',
        'Flux source-controller pulls ghcr.io/fluxcd/source-controller:v1.9.0, which is in none of the image archives (kv.tar, cilium-saved.tar)',
      ],
    ]);
  });

  it('IMAGE_ARCHIVE_INVALID for a wrong sha256 or a file that is no image archive', async () => {
    const good = put('good.tar', ociArchive(['ghcr.io/kube-vip/kube-vip:v0.9.2']));
    const sum = createHash('sha256')
      .update(ociArchive(['ghcr.io/kube-vip/kube-vip:v0.9.2']))
      .digest('hex');
    expect((await readArchives([{ path: good, sha256: sum }])).stops).toEqual([]);
    const { stops } = await readArchives([{ path: good, sha256: '0'.repeat(64) }, { path: put('junk.tar.gz', 'junk') }]);
    expect(stops.map((c) => [c.causeId, c.message])).toEqual([
      ['IMAGE_ARCHIVE_INVALID', `${good}: its sha256 is ${sum}, the inventory says ${'0'.repeat(64)}`],
      ['IMAGE_ARCHIVE_INVALID', expect.stringMatching(/junk\.tar\.gz: not an image archive k3s can import: it cannot be read as a compressed tar: /)],
    ]);
  });
});
