// Image references as containerd's CRI plugin reads them (distribution/reference ParseNormalizedNamed):
// a short name is on docker.io, a one-part docker.io name is under library/, a name with neither tag
// nor digest means :latest. Shared by the engine's artifact check and the twin's image store.

export interface ImageRef {
  /** The normalised repository, e.g. quay.io/cilium/cilium or docker.io/library/busybox. */
  repository: string;
  tag?: string;
  /** sha256:… when the reference pins a digest. */
  digest?: string;
}

export function parseImageRef(ref: string): ImageRef {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const parts = rest.split('/');
  const first = parts[0];
  const hasRegistry = parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  let repository = hasRegistry ? rest : `docker.io/${rest}`;
  if (repository.startsWith('docker.io/') && repository.split('/').length === 2) repository = `docker.io/library/${repository.slice('docker.io/'.length)}`;
  if (tag === undefined && digest === undefined) tag = 'latest';
  return { repository, tag, digest };
}

/** The reference written out in full (repository[:tag][@digest]), as containerd names the image. */
export function formatImageRef(r: ImageRef): string {
  return `${r.repository}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}

/** The registry host of a reference (for the pull error's URL). */
export function registryOf(r: ImageRef): string {
  return r.repository.split('/')[0] === 'docker.io' ? 'registry-1.docker.io' : r.repository.split('/')[0];
}
