// `bootstrap artifacts`: downloads against a release server on 127.0.0.1 (test/support/artifact-server.ts):
// placed and verified, a rerun that downloads nothing, a wrong checksum, a truncated body resumed with a
// Range request, a 404, redirects, a dead server, and what cannot be downloaded at all.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fetchArtifacts, type ArtifactEvent } from '../../src/artifacts/fetch.ts';
import { nodeHttp } from '../../src/artifacts/http.ts';
import { artifactsOf, sourcesFrom } from '../../src/artifacts/sources.ts';
import { causesOf } from '../../src/errors.ts';
import { fromText } from '../../src/inventory/load.ts';
import { artifactServer, type ArtifactServer } from '../support/artifact-server.ts';
import { AIRGAP, CHART, FLUX, K3S, V, bytes, inventory, releaseEnv, serveRelease, sha } from '../support/artifact-release.ts';

let root: string;
let server: ArtifactServer;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'artifacts-fetch-'));
  server = await artifactServer();
  serveRelease(server);
});
afterEach(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const env = () => releaseEnv(server.base);

async function run(text = inventory(), opts: { check?: boolean; sources?: NodeJS.ProcessEnv; idleMs?: number } = {}) {
  const loaded = fromText(text, join(root, 'lab.yaml'), join(root, 'home'));
  const events: ArtifactEvent[] = [];
  const list = artifactsOf(loaded, sourcesFrom(opts.sources ?? env()));
  try {
    const summary = await fetchArtifacts(
      list,
      { http: nodeHttp({ idleMs: opts.idleMs ?? 2000, maxRedirects: 5 }), emit: (e) => events.push(e) },
      { check: opts.check ?? false },
    );
    return { summary, events, causes: [] as ReturnType<typeof causesOf> };
  } catch (err) {
    const causes = causesOf(err);
    if (!causes.length) throw err;
    return { summary: undefined, events, causes };
  }
}

const at = (rel: string) => join(root, rel);

describe('bootstrap artifacts: downloads', () => {
  it('places every artifact, verified, with its sha256 beside it (the binary executable)', async () => {
    const r = await run();
    expect(r.causes.map((c) => c.message)).toEqual([]);
    expect(r.summary).toEqual({ present: 0, placed: 4, missing: 0 });
    expect(readFileSync(at('artifacts/k3s/k3s')).equals(K3S)).toBe(true);
    expect(readFileSync(at('artifacts/k3s/k3s.sha256'), 'utf8')).toBe(`${sha(K3S)}  k3s\n`);
    expect(statSync(at('artifacts/k3s/k3s')).mode & 0o777).toBe(0o755);
    expect(readFileSync(at('artifacts/k3s/k3s-airgap-images-amd64.tar.zst.sha256'), 'utf8')).toBe(`${sha(AIRGAP)}  k3s-airgap-images-amd64.tar.zst\n`);
    expect(readFileSync(at('artifacts/cilium-1.19.5.tgz.sha256'), 'utf8')).toContain(sha(CHART));
    expect(readFileSync(at('artifacts/flux-install.yaml'), 'utf8')).toBe(FLUX);
    expect(existsSync(at('artifacts/k3s/k3s.part'))).toBe(false);
    // The k3s version's "+" travels encoded, as GitHub's release URLs have it.
    expect(r.events.filter((e) => e.type === 'artifact-download').map((e) => (e as { url: string }).url)[0]).toBe(`${server.base}/k3s/v1.33.5%2Bk3s1/k3s`);
    expect(r.events.some((e) => e.type === 'artifact-progress')).toBe(true);
    // The k3s checksum list is fetched once for both of its files.
    expect(server.requests.filter((q) => q.path.endsWith('sha256sum-amd64.txt'))).toHaveLength(1);
  });

  it('a rerun downloads nothing and asks the server nothing', async () => {
    await run();
    const before = server.requests.length;
    const r = await run();
    expect(r.summary).toEqual({ present: 4, placed: 0, missing: 0 });
    expect(server.requests.length).toBe(before);
    expect(r.events.every((e) => e.type === 'artifact-present' && e.verified)).toBe(true);
  });

  it('a wrong checksum is ARTIFACT_CHECKSUM_MISMATCH: nothing placed, the bytes discarded', async () => {
    serveRelease(server, `${sha('something else')}  k3s\n${sha(AIRGAP)}  k3s-airgap-images-amd64.tar.zst\n`);
    const r = await run();
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_CHECKSUM_MISMATCH']);
    expect(r.causes[0].message).toContain('k3s binary');
    expect(r.causes[0].evidence.seen).toContain(sha(K3S));
    expect(r.causes[0].evidence.command).toContain(at('artifacts/k3s/k3s'));
    expect(existsSync(at('artifacts/k3s/k3s'))).toBe(false);
    expect(existsSync(at('artifacts/k3s/k3s.part'))).toBe(false);
    // the others were placed all the same
    expect(existsSync(at('artifacts/cilium-1.19.5.tgz'))).toBe(true);
  });

  it('a truncated body is ARTIFACT_TRUNCATED; the rerun resumes with a Range request and completes', async () => {
    server.routes.set(`/k3s/${V}/k3s`, { body: K3S, truncateOnceAt: 100_000 });
    const first = await run();
    expect(first.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_TRUNCATED']);
    expect(first.causes[0].message).toContain(`100000 of ${K3S.length} bytes`);
    expect(statSync(at('artifacts/k3s/k3s.part')).size).toBe(100_000);
    expect(existsSync(at('artifacts/k3s/k3s'))).toBe(false);

    const second = await run();
    expect(second.causes).toEqual([]);
    expect(server.requests.filter((q) => q.path.endsWith('/k3s')).at(-1)?.range).toBe('bytes=100000-');
    expect(second.events.find((e) => e.type === 'artifact-download')).toMatchObject({ resumeFrom: 100_000 });
    expect(readFileSync(at('artifacts/k3s/k3s')).equals(K3S)).toBe(true);
    expect(readFileSync(at('artifacts/k3s/k3s.sha256'), 'utf8')).toContain(sha(K3S));
  });

  it('a .part as long as the file (416 to its Range) is downloaded again from the start', async () => {
    mkdirSync(at('artifacts/k3s'), { recursive: true });
    writeFileSync(at('artifacts/k3s/k3s.part'), Buffer.concat([K3S, Buffer.from('extra')]));
    const r = await run();
    expect(r.causes).toEqual([]);
    expect(server.requests.filter((q) => q.path.endsWith('/k3s')).map((q) => q.range)).toEqual([`bytes=${K3S.length + 5}-`, undefined]);
    expect(readFileSync(at('artifacts/k3s/k3s')).equals(K3S)).toBe(true);
  });

  it('a server that stops sending is named within the idle budget (ARTIFACT_TRUNCATED: resumable), its bytes kept', async () => {
    server.routes.set(`/k3s/${V}/k3s`, { body: K3S, stallAt: 1000 });
    const started = Date.now();
    const r = await run(inventory(), { idleMs: 300 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_TRUNCATED']);
    expect(r.causes[0].evidence.seen).toContain(`1000 of ${K3S.length} bytes received (no data for 300 ms)`);
    expect(statSync(at('artifacts/k3s/k3s.part')).size).toBe(1000);
  });

  it('a 404 is ARTIFACT_NOT_FOUND naming what to download, from where, and where to put it', async () => {
    server.routes.delete('/cilium/cilium-1.19.5.tgz');
    const r = await run();
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_NOT_FOUND']);
    const [c] = r.causes;
    expect(c.message).toContain('cilium.chart');
    expect(c.evidence.seen).toContain('HTTP 404');
    expect(c.evidence.command).toBe(
      `curl -fL -C - -o ${at('artifacts/cilium-1.19.5.tgz')}.part ${server.base}/cilium/cilium-1.19.5.tgz && mv ${at('artifacts/cilium-1.19.5.tgz')}.part ${at('artifacts/cilium-1.19.5.tgz')}`,
    );
  });

  it('a release without the checksum list is named before a byte of the file is downloaded', async () => {
    server.routes.delete(`/k3s/${V}/sha256sum-amd64.txt`);
    const r = await run();
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_NOT_FOUND', 'ARTIFACT_NOT_FOUND']);
    expect(r.causes[0].message).toContain('sha256sum-amd64.txt');
    expect(server.requests.some((q) => q.path.endsWith('/k3s'))).toBe(false);
  });

  it('follows redirects, and stops an endless one with ARTIFACT_UNREACHABLE', async () => {
    server.routes.set('/cilium/cilium-1.19.5.tgz', { redirect: '/storage/cilium-1.19.5.tgz?token=x' });
    server.routes.set('/storage/cilium-1.19.5.tgz', { body: CHART });
    server.routes.set('/flux/v2.6.4/install.yaml', { redirect: `${server.base}/flux/v2.6.4/install.yaml`, status: 307 });
    const r = await run();
    expect(readFileSync(at('artifacts/cilium-1.19.5.tgz')).equals(CHART)).toBe(true);
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_UNREACHABLE']);
    expect(r.causes[0].evidence.seen).toContain('more than 5 redirects');
  });

  it('a server that does not answer is ARTIFACT_UNREACHABLE for each artifact, never a stack trace', async () => {
    const base = server.base;
    await server.close();
    const r = await run(inventory(), { sources: { BOOTSTRAP_K3S_RELEASES: base, BOOTSTRAP_CILIUM_CHARTS: base, BOOTSTRAP_FLUX_RELEASES: base } });
    expect(r.causes.map((c) => c.causeId)).toEqual(Array(4).fill('ARTIFACT_UNREACHABLE'));
    expect(r.causes[0].evidence.seen).toMatch(/connection refused/);
    server = await artifactServer(); // for afterEach
  });

  it('--check lists what would be downloaded and downloads nothing', async () => {
    const r = await run(inventory(), { check: true });
    expect(r.summary).toEqual({ present: 0, placed: 0, missing: 4 });
    expect(server.requests).toEqual([]);
    expect(existsSync(at('artifacts/k3s/k3s'))).toBe(false);
  });
});

describe('bootstrap artifacts: what it cannot download or verify', () => {
  it('an image archive without a url, a Flux install without a version: ARTIFACT_NO_SOURCE with what to do', async () => {
    const r = await run(inventory({ flux: '', archives: '  imageArchives: [{ file: ./images/cilium.tar }]' }));
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_NO_SOURCE', 'ARTIFACT_NO_SOURCE']);
    expect(r.causes[0].message).toContain('flux.install');
    expect(r.causes[0].evidence.command).toContain('version');
    expect(r.causes[1].evidence.command).toContain(`skopeo copy --all docker://<image> oci-archive:${at('images/cilium.tar')}`);
  });

  it('an image archive with a url and sha256 is downloaded and verified against the pin', async () => {
    const archive = bytes(10_000, 9);
    server.routes.set('/mirror/cilium.tar', { body: archive });
    const r = await run(
      inventory({ archives: `  imageArchives: [{ file: ./images/cilium.tar, url: "${server.base}/mirror/cilium.tar", sha256: ${sha(archive)} }]` }),
    );
    expect(r.causes).toEqual([]);
    expect(readFileSync(at('images/cilium.tar.sha256'), 'utf8')).toContain(sha(archive));
  });

  it('a Flux install without a pin is placed, said to be unverified with its computed sha256, and gets no .sha256', async () => {
    const r = await run(inventory({ flux: 'version: v2.6.4' }));
    expect(r.causes).toEqual([]);
    const placed = r.events.find((e) => e.type === 'artifact-placed' && e.key === 'flux.install');
    expect(placed).toMatchObject({ verified: false });
    expect((placed as { note: string }).note).toContain(sha(FLUX));
    expect(existsSync(at('artifacts/flux-install.yaml.sha256'))).toBe(false);
  });

  it('a file already in place is verified against the release, and left alone when it is not the release', async () => {
    mkdirSync(at('artifacts/k3s'), { recursive: true });
    writeFileSync(at('artifacts/k3s/k3s'), K3S);
    writeFileSync(at('artifacts/cilium-1.19.5.tgz'), 'another chart');
    const r = await run();
    expect(r.causes.map((c) => c.causeId)).toEqual(['ARTIFACT_CHECKSUM_MISMATCH']);
    expect(r.causes[0].message).toContain('cilium.chart');
    expect(r.causes[0].remedy).toContain(`Remove ${at('artifacts/cilium-1.19.5.tgz')}`);
    expect(readFileSync(at('artifacts/cilium-1.19.5.tgz'), 'utf8')).toBe('another chart');
    expect(readFileSync(at('artifacts/k3s/k3s.sha256'), 'utf8')).toContain(sha(K3S));
    expect(server.requests.some((q) => q.path === `/k3s/${V}/k3s`)).toBe(false);
  });
});
