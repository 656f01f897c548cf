// `bootstrap artifacts`: every artifact the inventory names that is missing is downloaded to
// `<file>.part` (resumed when one is there), verified against the release's published sha256 (or the
// inventory's pin), renamed into place, and its sha256 written beside it as `<file>.sha256` (sha256sum's
// format). A file in place with a `.sha256` that matches is done: a rerun needs no network. Every failure
// is a named cause saying what to download, from where, and where to put it; the others still run.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { CauseError, stopOf } from '../errors.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { sha256File } from '../util/sha256-file.ts';
import { fetchText, sha256FromHelmIndex } from './checksums.ts';
import { sha256FromList } from './sha256-list.ts';
import { DownloadError, downloadToPart, type Progress } from './download.ts';
import type { Http } from './http.ts';
import type { Artifact, Checksum } from './sources.ts';

export type ArtifactEvent =
  | { type: 'artifact-present'; key: string; path: string; sha256: string; verified: boolean; note?: string }
  | { type: 'artifact-missing'; key: string; path: string; url: string }
  | { type: 'artifact-download'; key: string; path: string; url: string; resumeFrom: number }
  | ({ type: 'artifact-progress'; key: string } & Progress)
  | { type: 'artifact-placed'; key: string; path: string; sha256: string; verified: boolean; bytes: number; note?: string };

export interface FetchDeps {
  http: Http;
  emit: (e: ArtifactEvent) => void;
  signal?: AbortSignal;
}

export interface FetchSummary {
  present: number;
  placed: number;
  /** --check: what a run would download. */
  missing: number;
}

/** Downloads what is missing (`check`: only says what), then stops with every cause met, or returns. */
export async function fetchArtifacts(artifacts: Artifact[], deps: FetchDeps, opts: { check: boolean }): Promise<FetchSummary> {
  const summary: FetchSummary = { present: 0, placed: 0, missing: 0 };
  const expected = memoExpected(deps);
  const causes: CauseError[] = [];
  for (const a of artifacts) {
    try {
      if (existsSync(a.path)) {
        await present(a, expected, deps);
        summary.present++;
      } else if (a.noSource || !a.url) {
        throw noSource(a);
      } else if (opts.check) {
        deps.emit({ type: 'artifact-missing', key: a.key, path: a.path, url: a.url });
        summary.missing++;
      } else {
        await place(a, a.url, expected, deps);
        summary.placed++;
      }
    } catch (err) {
      if (!(err instanceof CauseError) || deps.signal?.aborted) throw err;
      causes.push(err);
    }
  }
  if (causes.length) throw stopOf(causes);
  return summary;
}

type Expected = (a: Artifact) => Promise<{ sha256?: string; by: string }>;

/** The sha256 an artifact must have, and who says so; each published list is fetched once a run. */
function memoExpected(deps: FetchDeps): Expected {
  const texts = new Map<string, Promise<string>>();
  const text = (url: string) => {
    if (!texts.has(url)) texts.set(url, fetchText(deps.http, url, deps.signal));
    return texts.get(url)!;
  };
  return async (a) => {
    const c: Checksum = a.checksum;
    if (c.kind === 'pinned') return { sha256: c.sha256, by: c.key };
    if (c.kind === 'none') return { by: c.why };
    let found: string | undefined;
    try {
      const body = await text(c.url);
      found = c.kind === 'list' ? sha256FromList(body, c.name) : sha256FromHelmIndex(body, c.chart, c.version);
    } catch (err) {
      if (err instanceof DownloadError) throw failed(a, err, `the sha256 published at ${c.url}`);
      throw err;
    }
    const entry = c.kind === 'list' ? c.name : `${c.chart} ${c.version}`;
    if (!found) {
      throw new CauseError('ARTIFACT_NO_SOURCE', {
        message: `${a.key}: ${c.url} lists no sha256 for ${entry}`,
        evidence: { seen: `${c.url} answered, but names no ${entry}: is the version right?`, command: getCommand(a) },
      });
    }
    return { sha256: found, by: c.url };
  };
}

/** A file already in place: done when its `.sha256` matches; else verified now when a checksum can be had. */
async function present(a: Artifact, expected: Expected, deps: FetchDeps): Promise<void> {
  const actual = await sha256File(a.path);
  const recorded = readRecorded(a.path);
  const pinned = a.checksum.kind === 'pinned' ? a.checksum.sha256 : undefined;
  if (recorded === actual && (!pinned || pinned === actual)) {
    deps.emit({ type: 'artifact-present', key: a.key, path: a.path, sha256: actual, verified: true });
    return;
  }
  let want: { sha256?: string; by: string };
  try {
    want = await expected(a);
  } catch (err) {
    // A file the operator put there is not refused because its release cannot be reached from here.
    if (!(err instanceof CauseError)) throw err;
    deps.emit({ type: 'artifact-present', key: a.key, path: a.path, sha256: actual, verified: false, note: `not verified: ${err.message}` });
    return;
  }
  if (!want.sha256) {
    deps.emit({ type: 'artifact-present', key: a.key, path: a.path, sha256: actual, verified: false, note: `not verified: ${want.by}` });
    return;
  }
  if (want.sha256 !== actual) {
    throw new CauseError('ARTIFACT_CHECKSUM_MISMATCH', {
      message: `${a.key}: ${a.path} is in place, but is not the file ${want.by} names`,
      evidence: { seen: `sha256 ${actual}, expected ${want.sha256} (${want.by})`, command: `sha256sum ${a.path}` },
      remedy: `Remove ${a.path} (and ${a.path}.sha256) and run \`bootstrap artifacts <env>\` again to download the release's file${a.checksum.kind === 'pinned' ? `, or correct ${a.checksum.key}` : ''}.`,
    });
  }
  writeRecorded(a.path, actual);
  deps.emit({ type: 'artifact-present', key: a.key, path: a.path, sha256: actual, verified: true });
}

async function place(a: Artifact, url: string, expected: Expected, deps: FetchDeps): Promise<void> {
  // The checksum first: a release that does not exist is named before a byte of it is downloaded.
  const want = await expected(a);
  const part = `${a.path}.part`;
  mkdirSync(dirname(a.path), { recursive: true });
  deps.emit({ type: 'artifact-download', key: a.key, path: a.path, url, resumeFrom: sizeOfFile(part) });
  let bytes: number;
  try {
    ({ bytes } = await downloadToPart(deps.http, url, part, {
      signal: deps.signal,
      onProgress: (p) => deps.emit({ type: 'artifact-progress', key: a.key, ...p }),
    }));
  } catch (err) {
    if (err instanceof DownloadError && !deps.signal?.aborted) throw failed(a, err);
    throw err;
  }
  const actual = await sha256File(part);
  if (want.sha256 && want.sha256 !== actual) {
    rmSync(part, { force: true }); // resuming these bytes could never give the right file
    throw new CauseError('ARTIFACT_CHECKSUM_MISMATCH', {
      message: `${a.key}: the download from ${url} is not the file ${want.by} names; discarded`,
      evidence: { seen: `sha256 ${actual} (${bytes} bytes), expected ${want.sha256} (${want.by})`, command: getCommand(a) },
      retryable: true,
    });
  }
  chmodSync(part, a.mode);
  renameSync(part, a.path);
  if (want.sha256) writeRecorded(a.path, actual);
  const note = want.sha256 ? undefined : `not verified (${want.by}); computed sha256 ${actual}`;
  deps.emit({ type: 'artifact-placed', key: a.key, path: a.path, sha256: actual, verified: Boolean(want.sha256), bytes, ...(note && { note }) });
}

/** sha256sum's format, so `sha256sum -c <file>.sha256` checks it in that folder. */
function writeRecorded(path: string, sha256: string): void {
  writeFileAtomic(`${path}.sha256`, `${sha256}  ${basename(path)}\n`, 0o644);
}

function readRecorded(path: string): string | undefined {
  try {
    return /^([0-9a-f]{64})\b/.exec(readFileSync(`${path}.sha256`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

function sizeOfFile(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** What an operator runs to get the file by hand: from where, to where. */
function getCommand(a: Artifact): string {
  return `curl -fL -C - -o ${a.path}.part ${a.url} && mv ${a.path}.part ${a.path}`;
}

function noSource(a: Artifact): CauseError {
  return new CauseError('ARTIFACT_NO_SOURCE', {
    message: `${a.key}: ${a.path} is missing and bootstrap cannot download it`,
    evidence: { seen: a.noSource?.seen ?? 'no download URL', command: a.noSource?.command },
  });
}

/** A failed download as its cause: 404 (not there), a short body (resumable), or the network. */
function failed(a: Artifact, err: DownloadError, what = `${a.url}`): CauseError {
  const f = err.failure;
  const command = getCommand(a);
  const where = `put it at ${a.path}`;
  if (f.kind === 'status' && (f.status === 404 || f.status === 410))
    return new CauseError('ARTIFACT_NOT_FOUND', {
      message: `${a.key}: ${what} is not there (HTTP ${f.status})`,
      evidence: { seen: `GET ${f.url}: HTTP ${f.status}; ${where}`, command },
    });
  if (f.kind === 'truncated')
    return new CauseError('ARTIFACT_TRUNCATED', {
      message: `${a.key}: the download from ${f.url} ended at ${f.received} of ${f.expected} bytes`,
      evidence: { seen: `${f.received} of ${f.expected} bytes received${f.detail ? ` (${f.detail})` : ''}, kept in ${a.path}.part`, command },
      retryable: true,
    });
  return new CauseError('ARTIFACT_UNREACHABLE', {
    message: `${a.key}: ${what} could not be downloaded`,
    evidence: { seen: `GET ${f.url}: ${f.kind === 'status' ? `HTTP ${f.status}` : f.detail}; ${where}`, command },
    retryable: true,
  });
}
