// Does an image store hold the image a container names? As containerd's CRI plugin resolves a local image
// (containerd's CRI plugin getRepoDigestAndTag/normalizeImageRef: an image is found by its name, or by
// repository@digest where the digest is the image's target, i.e. the descriptor the archive's index named;
// a reference both tagged and digested resolves by its digest only): a reference that
// pins a digest needs an image of that repository with exactly that digest (its tag is not looked at); a
// reference without one needs the repository and tag.
import type { ArchivedImage } from './archive.ts';
import { formatImageRef, parseImageRef } from './ref.ts';

export type ImageMatch = { kind: 'found' } | { kind: 'digest-differs'; name: string; digest?: string } | { kind: 'absent' };

export function matchImage(ref: string, images: ArchivedImage[]): ImageMatch {
  const want = parseImageRef(ref);
  let near: ImageMatch = { kind: 'absent' };
  for (const img of images) {
    const have = parseImageRef(img.name);
    if (have.repository !== want.repository) continue;
    if (want.digest) {
      if (img.digest === want.digest) return { kind: 'found' };
      if (!want.tag || have.tag === want.tag) near = { kind: 'digest-differs', name: formatImageRef(have), digest: img.digest };
    } else if (have.tag === want.tag) return { kind: 'found' };
  }
  return near;
}
