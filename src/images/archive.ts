// What an image archive holds, read from its index without unpacking it: an OCI image layout
// (index.json: each manifest descriptor with the image name containerd gives it and the digest it keeps)
// or a `docker save` archive (manifest.json: RepoTags only; containerd builds its own manifest on import,
// so the registry's digest is gone). The formats k3s imports from agent/images (rancher/wharfie
// pkg/tarfile SupportedExtensions): .tar, .tar.gz/.tgz, .tar.zst/.tzst, .tar.lz4, .tar.bz2/.tbz; this
// reader opens the first three (zstd through the `zstd` program) and says so for the others.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { streamLocal } from '../local/process.ts';

const ARCHIVE_EXTENSIONS = ['.tar', '.tar.lz4', '.tar.bz2', '.tbz', '.tar.gz', '.tgz', '.tar.zst', '.tzst'] as const;

export interface ArchivedImage {
  /** The name containerd gives the image on import (io.containerd.image.name, else a full ref.name; docker: a RepoTag). */
  name: string;
  /** The digest the image keeps (the descriptor's, OCI only). */
  digest?: string;
}

export interface ArchiveIndex {
  format: 'oci' | 'docker';
  images: ArchivedImage[];
}

/** k3s imports files with these endings (case-insensitive), nothing else. */
export function isImageArchiveName(name: string): boolean {
  const n = name.toLowerCase();
  return ARCHIVE_EXTENSIONS.some((e) => n.endsWith(e));
}

const WANTED = new Set(['index.json', 'manifest.json', 'oci-layout']);
const MAX_INDEX_BYTES = 16 * 1024 * 1024;

/** Reads index.json / manifest.json of the archive; throws with the reason when it is neither. */
export async function readArchiveIndex(path: string): Promise<ArchiveIndex> {
  const files = await topLevelFiles(path);
  return indexOf(files);
}

/** The index from the top-level files of an archive (pure; the twin and tests use it on buffers). */
function indexOf(files: Map<string, Buffer>): ArchiveIndex {
  const index = files.get('index.json');
  if (index) {
    const j = JSON.parse(index.toString('utf8')) as { manifests?: { digest?: string; annotations?: Record<string, string> }[] };
    const images: ArchivedImage[] = [];
    for (const m of j.manifests ?? []) {
      const a = m.annotations ?? {};
      // containerd client/import.go imageName: io.containerd.image.name, else org.opencontainers.image.ref.name
      // (a bare tag there names nothing the CRI can find).
      const ref = a['io.containerd.image.name'] || a['org.opencontainers.image.ref.name'] || '';
      if (ref && /[/:]/.test(ref.replace(/@.*/, ''))) images.push({ name: ref.replace(/@.*/, ''), digest: m.digest });
    }
    return { format: 'oci', images };
  }
  const manifest = files.get('manifest.json');
  if (manifest) {
    const j = JSON.parse(manifest.toString('utf8')) as { RepoTags?: string[] | null }[];
    return { format: 'docker', images: j.flatMap((e) => (e.RepoTags ?? []).map((name) => ({ name }))) };
  }
  throw new Error('it holds neither index.json (an OCI image layout) nor manifest.json (docker save)');
}

async function topLevelFiles(path: string): Promise<Map<string, Buffer>> {
  const n = path.toLowerCase();
  if (n.endsWith('.tar')) return plainTar(path);
  if (n.endsWith('.tar.gz') || n.endsWith('.tgz')) return streamTar(createReadStream(path).pipe(createGunzip()));
  if (n.endsWith('.tar.zst') || n.endsWith('.tzst')) return zstdTar(path);
  if (isImageArchiveName(n)) throw new Error('its compression (.lz4, .bz2) cannot be read here to check its index: give it as .tar, .tar.gz or .tar.zst');
  throw new Error(`k3s imports only ${ARCHIVE_EXTENSIONS.join(' ')} files from agent/images`);
}

const octal = (b: Buffer) => parseInt(b.toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
const cstr = (b: Buffer) => b.toString('utf8').replace(/\0.*$/s, '');

interface Header {
  name: string;
  size: number;
  type: string;
}

function header(b: Buffer): Header | undefined {
  if (b.every((x) => x === 0)) return undefined;
  const prefix = b.subarray(257, 263).toString('latin1').startsWith('ustar') ? cstr(b.subarray(345, 500)) : '';
  const name = cstr(b.subarray(0, 100));
  return { name: prefix ? `${prefix}/${name}` : name, size: octal(b.subarray(124, 136)), type: String.fromCharCode(b[156] || 48) };
}

const topName = (n: string) => n.replace(/^\.\//, '');

/** A plain tar read header by header, skipping every file's data: a 1 GB archive costs a few reads. */
async function plainTar(path: string): Promise<Map<string, Buffer>> {
  const fh = await open(path, 'r');
  const out = new Map<string, Buffer>();
  try {
    let pos = 0;
    let longName: string | undefined;
    const h = Buffer.alloc(512);
    for (;;) {
      const { bytesRead } = await fh.read(h, 0, 512, pos);
      if (bytesRead < 512) break;
      const hd = header(h);
      if (!hd) break;
      pos += 512;
      const padded = Math.ceil(hd.size / 512) * 512;
      const read = async () => {
        const b = Buffer.alloc(hd.size);
        await fh.read(b, 0, hd.size, pos);
        return b;
      };
      if (hd.type === 'L' || hd.type === 'x') {
        const b = await read();
        longName = hd.type === 'L' ? cstr(b) : /\d+ path=([^\n]*)\n/.exec(b.toString('utf8'))?.[1];
      } else {
        const name = topName(longName ?? hd.name);
        longName = undefined;
        if ((hd.type === '0' || hd.type === '\0') && WANTED.has(name) && hd.size <= MAX_INDEX_BYTES) out.set(name, await read());
      }
      pos += padded;
    }
  } finally {
    await fh.close();
  }
  if (!out.size && !(await looksLikeTar(path))) throw new Error('it is not a tar archive');
  return out;
}

async function looksLikeTar(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const b = Buffer.alloc(512);
    const { bytesRead } = await fh.read(b, 0, 512, 0);
    return bytesRead === 512 && b.subarray(257, 262).toString('latin1') === 'ustar';
  } finally {
    await fh.close();
  }
}

/** A compressed tar, decompressed as a stream; only the wanted files are kept in memory. */
function streamTar(stream: Readable): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    const out = new Map<string, Buffer>();
    let buf: Buffer = Buffer.alloc(0);
    let cur: { name: string; left: number; pad: number; keep: Buffer[] | undefined; meta?: 'L' | 'x' } | undefined;
    let longName: string | undefined;
    let ended = false;
    stream.on('data', (chunk: Buffer) => {
      if (ended) return;
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      for (;;) {
        if (cur) {
          const take = Math.min(cur.left, buf.length);
          if (cur.keep) cur.keep.push(buf.subarray(0, take));
          cur.left -= take;
          buf = buf.subarray(take);
          if (cur.left > 0) return;
          const skip = Math.min(cur.pad, buf.length);
          cur.pad -= skip;
          buf = buf.subarray(skip);
          if (cur.pad > 0) return;
          if (cur.keep) {
            const data = Buffer.concat(cur.keep);
            if (cur.meta === 'L') longName = cstr(data);
            else if (cur.meta === 'x') longName = /\d+ path=([^\n]*)\n/.exec(data.toString('utf8'))?.[1];
            else out.set(cur.name, data);
          }
          cur = undefined;
        }
        if (buf.length < 512) return;
        const hd = header(buf.subarray(0, 512));
        buf = buf.subarray(512);
        if (!hd) {
          ended = true;
          stream.destroy();
          resolve(out);
          return;
        }
        const pad = Math.ceil(hd.size / 512) * 512 - hd.size;
        if (hd.type === 'L' || hd.type === 'x') cur = { name: '', left: hd.size, pad, keep: [], meta: hd.type };
        else {
          const name = topName(longName ?? hd.name);
          longName = undefined;
          const keep = (hd.type === '0' || hd.type === '\0') && WANTED.has(name) && hd.size <= MAX_INDEX_BYTES;
          cur = { name, left: hd.size, pad, keep: keep ? [] : undefined };
        }
      }
    });
    stream.on('error', (e) => (ended ? undefined : reject(new Error(`it cannot be read as a compressed tar: ${e.message}`))));
    stream.on('end', () => {
      if (!ended) resolve(out);
    });
  });
}

function zstdTar(path: string): Promise<Map<string, Buffer>> {
  const child = streamLocal('zstd', ['-dc', '--', path]);
  const failed = new Promise<never>((_, reject) =>
    child.on('error', () => reject(new Error('reading a .tar.zst needs the zstd program on this machine (Debian: apt-get install zstd)'))),
  );
  const read = streamTar(child.stdout).finally(() => child.kill());
  return Promise.race([read, failed]);
}
