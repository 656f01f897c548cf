// How `bootstrap artifacts` shows a download: a redrawn bar on a terminal, a line per 10 % in a log (none
// for a small file), JSON events with progress at most every 10 %.
import { describe, expect, it } from 'vitest';
import type { ArtifactEvent } from '../../src/artifacts/fetch.ts';
import { artifactRenderer } from '../../src/view/artifacts.ts';

const MiB = 1024 * 1024;
const key = 'k3s.artifacts: the air-gap images';

function download(totalBytes: number): ArtifactEvent[] {
  const events: ArtifactEvent[] = [{ type: 'artifact-download', key, path: '/a/images.tar.zst', url: 'https://example.invalid/images.tar.zst', resumeFrom: 0 }];
  for (let i = 0; i <= 100; i++) events.push({ type: 'artifact-progress', key, bytes: Math.round((i * totalBytes) / 100), totalBytes });
  events.push({ type: 'artifact-placed', key, path: '/a/images.tar.zst', sha256: 'ab'.repeat(32), verified: true, bytes: totalBytes });
  return events;
}

function render(events: ArtifactEvent[], view: { json?: boolean; tty?: boolean }) {
  const out: string[] = [];
  const status: string[] = [];
  const emit = artifactRenderer({ out: (l) => out.push(l), json: view.json ?? false, ...(view.tty && { status: (l: string) => status.push(l) }) });
  events.forEach(emit);
  return { out, status };
}

describe('artifactRenderer', () => {
  it('on a terminal redraws one bar, then prints the result on a cleared line', () => {
    const { out, status } = render(download(200 * MiB), { tty: true });
    expect(status).toContain(`  ${key}  [############------------] 50 % of 200.0 MiB`);
    expect(status.at(-1)).toBe('');
    expect(out).toEqual([`get      ${key}: https://example.invalid/images.tar.zst`, `placed   ${key}: /a/images.tar.zst (200.0 MiB, sha256 verified)`]);
  });

  it('in a log prints a line per 10 %, and none for a small file', () => {
    const big = render(download(200 * MiB), {}).out.filter((l) => l.includes('% of'));
    expect(big).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((p) => `  ${key}: ${p} % of 200.0 MiB`));
    expect(render(download(1 * MiB), {}).out.filter((l) => l.includes('% of'))).toEqual([]);
  });

  it('with --json prints every event as JSON, progress at most every 10 %', () => {
    const lines = render(download(1 * MiB), { json: true }).out.map((l) => JSON.parse(l));
    expect(lines.filter((e) => e.type === 'artifact-progress')).toHaveLength(11);
    expect(lines.at(-1)).toMatchObject({ type: 'artifact-placed', verified: true });
  });
});
