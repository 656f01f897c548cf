// The twin's node image store and the kubelet's pull back-off: archives in agent/images imported at start
// and when one is added (with k3s's log lines), and a container whose image no archive brought waits
// ErrImagePull, then ImagePullBackOff "Back-off pulling image", retried after 10 s, 20 s, … until it is there.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dockerSaveArchive, ociArchive } from '../../lab/image-archives.ts';
import { startNodeImages } from '../../lab/twin/runtime/images.ts';
import { pullWithBackOff } from '../../lab/twin/runtime/image-pull.ts';
import type { ContainerState } from '../../lab/twin/addons/daemonsets.ts';

const DIGEST = `sha256:${'5'.repeat(64)}`;
const CILIUM = `quay.io/cilium/cilium:v1.19.5@${DIGEST}`;

function dataDir(): { root: string; images: string } {
  const root = mkdtempSync(join(tmpdir(), 'twin-images-'));
  const images = join(root, 'agent', 'images');
  mkdirSync(images, { recursive: true });
  return { root, images };
}

async function until(f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('node images', () => {
  it('imports the archives there at start, logging as k3s does; an OCI archive keeps the digest, a docker save one tags only', async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((l: any) => (lines.push(String(l)), true));
    const d = dataDir();
    writeFileSync(join(d.images, 'cilium.tar'), ociArchive([CILIUM]));
    writeFileSync(join(d.images, 'saved.tar'), dockerSaveArchive(['ghcr.io/kube-vip/kube-vip:v0.9.2', 'quay.io/cilium/operator-generic:v1.19.5']));
    writeFileSync(join(d.images, 'notes.txt.bak'), 'ignored');
    const images = startNodeImages(d.root, false);
    await images.ready;
    images.stop();
    expect(images.has(CILIUM)).toBe(true);
    expect(images.has('ghcr.io/kube-vip/kube-vip:v0.9.2')).toBe(true);
    expect(images.has(`quay.io/cilium/operator-generic:v1.19.5@${DIGEST}`)).toBe(false);
    const msgs = lines.map((l) => /msg="(.*)"/.exec(l)?.[1]);
    expect(msgs).toEqual([
      `Importing images from ${d.images}/cilium.tar`,
      'Imported quay.io/cilium/cilium:v1.19.5',
      expect.stringMatching(new RegExp(`^Imported images from ${d.images}/cilium.tar in [\\d.]+m?s$`)),
      `Importing images from ${d.images}/saved.tar`,
      'Imported ghcr.io/kube-vip/kube-vip:v0.9.2',
      'Imported quay.io/cilium/operator-generic:v1.19.5',
      expect.stringMatching(/^Imported images from .*saved\.tar in /),
    ]);
    expect(images.pullError('ghcr.io/kube-vip/kube-vip:v0.9.3')).toBe(
      'rpc error: code = Unknown desc = failed to pull and unpack image "ghcr.io/kube-vip/kube-vip:v0.9.3": failed to resolve reference "ghcr.io/kube-vip/kube-vip:v0.9.3": failed to do request: Head "https://ghcr.io/v2/kube-vip/kube-vip/manifests/v0.9.3": dial tcp: lookup ghcr.io: no such host',
    );
  });

  it('an archive added while it runs is imported within seconds (the image watcher); a broken one is logged', async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((l: any) => (lines.push(String(l)), true));
    const d = dataDir();
    const images = startNodeImages(d.root, false);
    await images.ready;
    expect(images.has('ghcr.io/kube-vip/kube-vip:v0.9.2')).toBe(false);
    writeFileSync(join(d.images, 'junk.tar.gz'), 'junk');
    writeFileSync(join(d.images, 'kube-vip.tar'), ociArchive(['ghcr.io/kube-vip/kube-vip:v0.9.2']));
    await until(() => images.has('ghcr.io/kube-vip/kube-vip:v0.9.2'));
    images.stop();
    expect(lines.join('')).toContain(
      `level=error msg="Failed to process image event: failed to import ${d.images}/junk.tar.gz: failed to import images from ${d.images}/junk.tar.gz: unpack: it cannot be read as a compressed tar:`,
    );
  });

  it('with a registry (tests on one machine) every image is pullable', () => {
    const images = startNodeImages(dataDir().root, true);
    images.stop();
    expect(images.has('anything/at:all')).toBe(true);
  });
});

describe('the kubelet pull back-off', () => {
  it('ErrImagePull, then ImagePullBackOff; tried again after 10 s then 20 s; starts once the image is there', async () => {
    vi.useFakeTimers();
    let present = false;
    const images = { has: () => present, pullError: (r: string) => `failed to pull and unpack image "${r}"`, ready: Promise.resolve(), stop: () => undefined };
    const states: ContainerState[] = [];
    let started = 0;
    const running = pullWithBackOff(
      images,
      CILIUM,
      (s) => states.push(s),
      () => started++,
    );
    const waiting = () => states.map((s) => s.waiting?.reason);
    expect(states.at(-1)).toEqual({ ready: false, waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${CILIUM}"` } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(states.at(-1)).toEqual({ ready: false, waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${CILIUM}"` } });
    await vi.advanceTimersByTimeAsync(8900);
    expect(waiting()).toEqual(['ErrImagePull', 'ImagePullBackOff']);
    await vi.advanceTimersByTimeAsync(100); // 10 s after the first pull
    expect(waiting()).toEqual(['ErrImagePull', 'ImagePullBackOff', 'ErrImagePull']);
    await vi.advanceTimersByTimeAsync(1000 + 18_900);
    expect(waiting()).toHaveLength(4);
    present = true;
    await vi.advanceTimersByTimeAsync(100); // 20 s after the second pull
    expect(started).toBe(1);
    expect(waiting()).toHaveLength(4);
    running.stop();
  });
});
