// The sha256 a release publishes for a file: a line of a sha256sum list (k3s's sha256sum-<arch>.txt, parsed
// by ./sha256-list.ts), or the `digest` of a chart version in a Helm repository's index.yaml (Helm writes the
// tarball's sha256 there).
import { parse } from 'yaml';
import { DownloadError } from './download.ts';
import { HttpFailure, type Http } from './http.ts';

/** entries.<chart>[version == v].digest of a Helm repository index. */
export function sha256FromHelmIndex(text: string, chart: string, version: string): string | undefined {
  let index: { entries?: Record<string, { version?: unknown; digest?: unknown }[]> };
  try {
    index = parse(text, { maxAliasCount: 100 }) ?? {};
  } catch {
    return undefined;
  }
  const entry = index.entries?.[chart]?.find((e) => String(e.version).replace(/^v/, '') === version.replace(/^v/, ''));
  return typeof entry?.digest === 'string' && /^[0-9a-f]{64}$/i.test(entry.digest) ? entry.digest.toLowerCase() : undefined;
}

/** Larger than Cilium's index.yaml (every version since 1.0) many times over; a checksum list is a few lines. */
const MAX_TEXT_BYTES = 64 * 1024 * 1024;

/** A small text document over HTTP (a checksum list, an index). Throws DownloadError. */
export async function fetchText(http: Http, url: string, signal?: AbortSignal): Promise<string> {
  const res = await http.get(url, { signal }).catch((err: unknown) => {
    if (err instanceof HttpFailure) throw new DownloadError({ kind: 'network', url, detail: err.detail });
    throw err;
  });
  if (res.status !== 200) {
    res.body.resume();
    throw new DownloadError({ kind: 'status', status: res.status, url: res.url });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_TEXT_BYTES) {
        res.body.destroy();
        throw new DownloadError({ kind: 'network', url, detail: `larger than ${MAX_TEXT_BYTES / 1024 / 1024} MiB: not a checksum list` });
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof DownloadError) throw err;
    throw new DownloadError({ kind: 'network', url, detail: (err as Error).message });
  }
  return Buffer.concat(chunks).toString('utf8');
}
