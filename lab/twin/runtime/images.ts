// The node's image store, as k3s fills containerd's from <data-dir>/agent/images (k3s-io/k3s
// pkg/agent/containerd/containerd.go preloadImages/preloadFile, watcher.go): every archive there is
// imported when k3s starts, and a new or grown file within about 2 s while it runs; each import logs
// `Importing images from <file>`, `Imported <name>` per image and `Imported images from <file> in <d>`; a
// file that is no image archive logs `Error encountered while importing <file>: <err>` (at start) or
// `Failed to process image event: failed to import <file>: <err>` (later). An OCI archive's image keeps the
// digest of its index entry; a docker save archive's only its tags (containerd writes its own manifest).
// The image store outlives k3s in containerd; the twin's is rebuilt from the folder at each start, which
// is the same while the operator only adds archives.
// A lab host reaches no registry: an image that no archive brought is not pullable. Tests on one machine
// pull anything unless K3S_TWIN_AIRGAP=1.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type ArchivedImage, isImageArchiveName, readArchiveIndex } from '../../../src/images/archive.ts';
import { matchImage } from '../../../src/images/match.ts';
import { formatImageRef, parseImageRef, registryOf } from '../../../src/images/ref.ts';
import { log } from '../log.ts';

export interface NodeImages {
  /** Is the image on the node, or pullable? */
  has(ref: string): boolean;
  /** The CRI's pull error for an image that is neither (kubelet puts it in the ErrImagePull message). */
  pullError(ref: string): string;
  /** Resolves once the files there at start are imported (k3s starts the kubelet only then). */
  ready: Promise<void>;
  stop(): void;
}

/** A lab host has no route to a registry; tests on one machine (an add-on root) have one unless K3S_TWIN_AIRGAP=1. */
export function registryReachable(addonRoot: string | undefined): boolean {
  return addonRoot !== undefined && process.env.K3S_TWIN_AIRGAP !== '1';
}

/** Go's time.Duration String for a short duration, e.g. 3.141592ms. */
const goDuration = (ms: number) => (ms >= 1000 ? `${+(ms / 1000).toFixed(9)}s` : `${+ms.toFixed(6)}ms`);

export function startNodeImages(dataDir: string, registryReachable: boolean): NodeImages {
  const dir = join(dataDir, 'agent', 'images');
  const images = new Map<string, ArchivedImage[]>(); // by file
  const seen = new Map<string, { size: number; mtimeMs: number }>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const scan = async (first: boolean) => {
    let names: string[];
    try {
      names = readdirSync(dir)
        .filter((n) => !n.startsWith('.'))
        .sort();
    } catch {
      names = [];
    }
    for (const name of names) {
      const file = join(dir, name);
      let st;
      try {
        st = statSync(file);
      } catch {
        continue;
      }
      if (!st.isFile() || !isImageArchiveName(name)) continue;
      const last = seen.get(file);
      // watcher.go: imported when new, or when its size changed and it is newer than at the last import.
      if (last && !(st.size !== last.size && st.mtimeMs > last.mtimeMs)) continue;
      seen.set(file, { size: st.size, mtimeMs: st.mtimeMs });
      const t0 = performance.now();
      log.info(`Importing images from ${file}`);
      try {
        const index = await readArchiveIndex(file);
        const named = index.images.map((i) => ({ ...i, name: formatImageRef(parseImageRef(i.name)) }));
        images.set(file, named);
        for (const i of named) log.info(`Imported ${i.name}`);
        log.info(`Imported images from ${file} in ${goDuration(performance.now() - t0)}`);
      } catch (e) {
        const err = `unpack: ${(e as Error).message}`;
        if (first) log.error(`Error encountered while importing ${file}: failed to import images from ${file}: ${err}`);
        else log.error(`Failed to process image event: failed to import ${file}: failed to import images from ${file}: ${err}`);
      }
    }
  };
  const tick = async () => {
    await scan(false).catch(() => undefined);
    if (!stopped) timer = setTimeout(tick, 2000);
  };
  const ready = scan(true)
    .catch(() => undefined)
    .then(() => {
      if (!stopped) timer = setTimeout(tick, 2000);
    });

  const all = () => [...images.values()].flat();
  return {
    ready,
    has: (ref) => registryReachable || matchImage(ref, all()).kind === 'found',
    pullError(ref) {
      // containerd internal/cri/server/images/image_pull.go ("failed to pull and unpack image %q: %w"),
      // client/pull.go ("failed to resolve reference %q: %w"), the docker resolver's HEAD of the manifest;
      // the name is the normalised one. The last part is what a host without a route to the registry sees.
      const r = parseImageRef(ref);
      const full = formatImageRef(r);
      const path = r.repository.split('/').slice(1).join('/');
      const url = `https://${registryOf(r)}/v2/${path}/manifests/${r.digest ?? r.tag}`;
      return `rpc error: code = Unknown desc = failed to pull and unpack image "${full}": failed to resolve reference "${full}": failed to do request: Head "${url}": dial tcp: lookup ${registryOf(r)}: no such host`;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
