// The files of a chart .tgz (gzip + ustar, with GNU long names and pax paths), read in memory.
import { gunzipSync } from 'node:zlib';

export function tgzFiles(tgz: Buffer): Map<string, Buffer> {
  const tar = gunzipSync(tgz);
  const out = new Map<string, Buffer>();
  const str = (b: Buffer) => b.subarray(0, b.indexOf(0) < 0 ? b.length : b.indexOf(0)).toString('utf8');
  let off = 0;
  let long: string | undefined;
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = parseInt(str(h.subarray(124, 136)).trim() || '0', 8);
    const type = String.fromCharCode(h[156] || 48);
    const prefix = str(h.subarray(345, 500));
    const name = long ?? (prefix ? `${prefix}/${str(h.subarray(0, 100))}` : str(h.subarray(0, 100)));
    const data = tar.subarray(off + 512, off + 512 + size);
    long = undefined;
    if (type === 'L') long = str(data);
    else if (type === 'x') long = /\d+ path=(.*)\n/.exec(data.toString('utf8'))?.[1];
    else if (type === '0' || type === '7') out.set(name, Buffer.from(data));
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
