// The files of a tar archive (a Helm chart, once gunzipped) without extracting it: walk the tar headers.
// Enough of the format for charts: ustar names with prefix, GNU long names ('L') and pax 'path' records.

const BLOCK = 512;

function cString(buf: Buffer, start: number, len: number): string {
  const field = buf.subarray(start, start + len);
  const nul = field.indexOf(0);
  return field.subarray(0, nul < 0 ? len : nul).toString('utf8');
}

function octal(buf: Buffer, start: number, len: number): number {
  const text = cString(buf, start, len).trim();
  return text ? Number.parseInt(text, 8) : 0;
}

function paxPath(data: Buffer): string | undefined {
  // Records: "<len> <key>=<value>\n"
  for (const m of data.toString('utf8').matchAll(/^\d+ ([^=]+)=(.*)$/gm)) if (m[1] === 'path') return m[2];
  return undefined;
}

/** Every regular file in a tar archive: name → content. */
export function tarFiles(tar: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let offset = 0;
  let longName: string | undefined;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break; // end of archive
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] || 48); // NUL means a regular file too
    const prefix = cString(header, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${cString(header, 0, 100)}` : cString(header, 0, 100));
    const data = tar.subarray(offset + BLOCK, offset + BLOCK + size);
    longName = undefined;
    if (type === 'L') longName = cString(data, 0, data.length);
    else if (type === 'x') longName = paxPath(data);
    else if (type === '0' || type === '7') files.set(name.replace(/^\.\//, ''), Buffer.from(data));
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return files;
}
