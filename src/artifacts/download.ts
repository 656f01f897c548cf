// One file from one URL into `<file>.part`, resumable: a `.part` left by an interrupted download is
// continued with an HTTP Range request (206), and started again when the server ignores the range (200)
// or refuses it (416). Verifying and placing the file is the caller's (fetch.ts).
import { createWriteStream, rmSync, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { HttpFailure, type Http } from './http.ts';

/** How a download failed, for the caller to name: the status (404), a short body, or the network. */
export type DownloadFailure =
  | { kind: 'status'; status: number; url: string }
  | { kind: 'truncated'; url: string; received: number; expected: number; detail?: string }
  | { kind: 'network'; url: string; detail: string };

export class DownloadError extends Error {
  constructor(readonly failure: DownloadFailure) {
    super(failure.kind === 'network' ? failure.detail : failure.kind === 'status' ? `HTTP ${failure.status}` : `truncated`);
    this.name = 'DownloadError';
  }
}

export interface Progress {
  /** Bytes of the file on disk so far (the resumed part included). */
  bytes: number;
  totalBytes?: number;
}

export interface DownloadResult {
  /** Bytes already in the `.part` when this download resumed it (0 for a fresh one). */
  resumedFrom: number;
  bytes: number;
}

const sizeOf = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/**
 * The body appended to (or written over) the part. Every byte that arrived is kept, also when the
 * connection breaks (a pipeline would drop what is still buffered): a resume starts from the file's size.
 */
function writeBody(body: Readable, part: string, start: number, progress: (bytes: number) => void): Promise<{ bytes: number; failure?: Error }> {
  return new Promise((resolve, reject) => {
    // A large buffer before pausing the body: a paused response that then breaks drops what it holds.
    const file = createWriteStream(part, { flags: start > 0 ? 'a' : 'w', mode: 0o644, highWaterMark: 16 << 20 });
    let bytes = start;
    let failure: Error | undefined;
    let ended = false;
    const finish = (err?: Error) => {
      if (ended) return;
      ended = true;
      failure = err;
      file.end();
    };
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      progress(bytes);
      if (!file.write(chunk)) {
        body.pause();
        file.once('drain', () => body.resume());
      }
    });
    body.on('end', () => finish());
    body.on('error', (err) => finish(err));
    body.on('close', () => finish(new Error('the connection closed before the body ended')));
    file.on('finish', () => resolve({ bytes, ...(failure && { failure }) }));
    file.on('error', (err) => {
      body.destroy();
      reject(err);
    });
  });
}

/** `bytes 100-199/200` → its start and total (total undefined for `*`). */
function contentRange(header: string | undefined): { start: number; total?: number } | undefined {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header ?? '');
  return m ? { start: Number(m[1]), ...(m[2] !== '*' && { total: Number(m[2]) }) } : undefined;
}

export async function downloadToPart(
  http: Http,
  url: string,
  part: string,
  opts: { signal?: AbortSignal; onProgress?: (p: Progress) => void } = {},
): Promise<DownloadResult> {
  for (let attempt = 0; ; attempt++) {
    const have = sizeOf(part);
    const res = await http.get(url, { headers: have > 0 ? { range: `bytes=${have}-` } : {}, signal: opts.signal }).catch((err: unknown) => {
      if (err instanceof HttpFailure) throw new DownloadError({ kind: 'network', url, detail: err.detail });
      throw err;
    });
    // 416: the part is as long as the file or longer (another version's bytes): start again, once.
    if (res.status === 416 && have > 0 && attempt === 0) {
      res.body.resume();
      rmSync(part, { force: true });
      continue;
    }
    let start = 0;
    let total: number | undefined;
    if (res.status === 206 && have > 0) {
      const range = contentRange(res.headers['content-range'] as string | undefined);
      if (!range || range.start !== have) {
        res.body.resume();
        throw new DownloadError({ kind: 'network', url, detail: `asked for bytes ${have}- and got ${res.headers['content-range'] ?? 'no Content-Range'}` });
      }
      start = have;
      total = range.total;
    } else if (res.status === 200) {
      const length = Number(res.headers['content-length']);
      total = Number.isFinite(length) && res.headers['content-length'] !== undefined ? length : undefined;
    } else {
      res.body.resume();
      throw new DownloadError({ kind: 'status', status: res.status, url: res.url });
    }
    const progress = (bytes: number) => opts.onProgress?.({ bytes, ...(total !== undefined && { totalBytes: total }) });
    progress(start);
    const { bytes, failure } = await writeBody(res.body, part, start, progress);
    const short = total !== undefined && bytes < total;
    if (failure && opts.signal?.aborted) throw failure;
    // A body that ended cleanly but short (a proxy closing politely) is as truncated as a reset one.
    if (short) throw new DownloadError({ kind: 'truncated', url, received: bytes, expected: total!, ...(failure && { detail: failure.message }) });
    if (failure) throw new DownloadError({ kind: 'network', url, detail: failure.message });
    return { resumedFrom: start, bytes };
  }
}
