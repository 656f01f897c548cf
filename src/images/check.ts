// Before any change (node-baseline's prepare, check mode too): each archive in k3s.imageArchives is there,
// has the sha256 the inventory gives, and is an image archive k3s can import; and on an air-gapped site
// (any archive named) every image the add-ons will pull is in one of them, a digest-pinned one in an OCI
// archive with that digest. Read on the operator's machine only.
import { basename } from 'node:path';
import { CauseError } from '../errors.ts';
import { type ArchiveIndex, readArchiveIndex } from './archive.ts';
import { matchImage } from './match.ts';
import { sha256FileOnce } from '../util/sha256-file.ts';
import type { RequiredImage } from './required.ts';

export interface ReadArchive {
  path: string;
  index: ArchiveIndex;
}

/** Reads each archive's index; a missing file is ARTIFACT_MISSING's (checked when the run starts). */
export async function readArchives(archives: { path: string; sha256?: string }[]): Promise<{ read: ReadArchive[]; stops: CauseError[] }> {
  const read: ReadArchive[] = [];
  const stops: CauseError[] = [];
  for (const a of archives) {
    const bad = (seen: string, command: string) =>
      stops.push(new CauseError('IMAGE_ARCHIVE_INVALID', { message: `${a.path}: ${seen}`, evidence: { command, seen }, retryable: false }));
    if (a.sha256) {
      const sum = await sha256FileOnce(a.path).catch(() => undefined);
      if (sum === undefined) continue;
      if (sum !== a.sha256) {
        bad(`its sha256 is ${sum}, the inventory says ${a.sha256}`, `sha256sum ${a.path}`);
        continue;
      }
    }
    try {
      read.push({ path: a.path, index: await readArchiveIndex(a.path) });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      bad(`not an image archive k3s can import: ${(e as Error).message}`, `tar -tf ${a.path} index.json manifest.json`);
    }
  }
  return { read, stops };
}

/** IMAGE_NOT_IN_ARCHIVES for each required image no archive holds (as the CRI would look it up). */
export function missingImageStops(required: RequiredImage[], archives: ReadArchive[]): CauseError[] {
  const stops: CauseError[] = [];
  for (const r of required) {
    let near: { archive: string; name: string; format: string; digest?: string } | undefined;
    let found = false;
    for (const a of archives) {
      const m = matchImage(r.image, a.index.images);
      if (m.kind === 'found') found = true;
      else if (m.kind === 'digest-differs') near ??= { archive: basename(a.path), name: m.name, format: a.index.format, digest: m.digest };
      if (found) break;
    }
    if (found) continue;
    const names = archives.map((a) => basename(a.path)).join(', ');
    const seen = near
      ? near.format === 'docker'
        ? `${r.by} pulls ${r.image}; ${near.archive} has ${near.name} as a docker save archive, which keeps tags only: containerd gives the imported image a digest of its own, so the pinned digest is found nowhere`
        : `${r.by} pulls ${r.image}; ${near.archive} has ${near.name} with digest ${near.digest ?? '(none)'}, not the pinned one`
      : `${r.by} pulls ${r.image}, which is in none of the image archives (${names})`;
    stops.push(
      new CauseError('IMAGE_NOT_IN_ARCHIVES', {
        message: seen,
        evidence: { command: 'tar -xOf <archive> index.json (or manifest.json)', seen, excerpt: r.image },
        retryable: false,
      }),
    );
  }
  return stops;
}
