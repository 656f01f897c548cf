// The run report as a browser draws it: Debian's headless Chromium lays the page out, a probe added to a
// copy of it measures every bar and the stop, and the test checks that each step's and gate's bar sits
// where its start puts it and is as long as its duration says, that the stop's row is drawn, visible,
// under the gate it stopped, and that the stop's colour is on the stopped gate and on nothing else; a
// screenshot of the page as it is (no probe) shows those colours painted where the bars were measured.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { renderReport } from '../../src/view/report-html.ts';
import { chromium, describeWithChromium } from '../support/chromium.ts';
import { decodePng, type Image } from '../support/png.ts';
import { EXPECTED_BARS, STOPPED_RUN } from '../support/report-events.ts';

const SPAN_MS = 100_000; // the run of report-events.ts, from its first event to its run-end
const STOP_RED = 'rgb(211, 47, 47)';
// Tall enough that the whole page is in the screenshot; the same for the measuring and the painting.
const WINDOW = ['--window-size=1400,1600', '--hide-scrollbars', '--force-device-scale-factor=1'];

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}
interface Measured {
  track: Box;
  bars: (Box & { kind: string; status: string; start: number; duration: number; title: string; colour: string })[];
  stops: (Box & { cause: string; host: string; border: string; text: string; inTimeline: boolean })[];
  pageWidth: number;
}

// Runs in the page once it is laid out, and leaves what it measured on the root element (base64: no
// escaping to undo in the dumped DOM). The report itself has no script; only this copy does.
const PROBE = `<script>
const box = (el) => { const r = el.getBoundingClientRect(); return { left: r.left, top: r.top + scrollY, width: r.width, height: r.height }; };
const m = {
  track: box(document.querySelector('.item .track')),
  bars: [...document.querySelectorAll('.bar[data-kind]')].map((b) => ({ ...box(b), kind: b.dataset.kind, status: b.dataset.status,
    start: Number(b.dataset.startMs), duration: Number(b.dataset.durationMs), title: b.title, colour: getComputedStyle(b).backgroundColor })),
  stops: [...document.querySelectorAll('.stop')].map((s) => ({ ...box(s), cause: s.dataset.cause, host: s.dataset.host,
    border: getComputedStyle(s).borderLeftColor, text: s.innerText, inTimeline: !!s.closest('.timeline') })),
  pageWidth: document.documentElement.scrollWidth,
};
document.documentElement.setAttribute('data-measure', btoa(unescape(encodeURIComponent(JSON.stringify(m)))));
</script>`;

describeWithChromium('the run report in headless Chromium', () => {
  let dir: string;
  let m: Measured;
  let shot: Image;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bootstrap-report-browser-'));
    const page = renderReport([...STOPPED_RUN], { runId: 'run-1' });
    const file = join(dir, 'report.html');
    const probed = join(dir, 'probed.html');
    writeFileSync(file, page);
    writeFileSync(probed, page.replace('</body>', `${PROBE}</body>`));
    const dom = await chromium([...WINDOW, '--dump-dom', pathToFileURL(probed).href], 20_000);
    const encoded = /data-measure="([A-Za-z0-9+/=]+)"/.exec(dom)?.[1];
    expect(encoded, `the probe ran in the page; the DOM was:\n${dom.slice(0, 500)}`).toBeDefined();
    m = JSON.parse(Buffer.from(encoded!, 'base64').toString('utf8'));
    await chromium([...WINDOW, `--screenshot=${join(dir, 'report.png')}`, pathToFileURL(file).href], 20_000);
    shot = decodePng(readFileSync(join(dir, 'report.png')));
  }, 45_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('draws every step and gate at its start, as long as its duration, on one scale', () => {
    const pxPerMs = m.track.width / SPAN_MS;
    expect(m.track.width).toBeGreaterThan(600);
    for (const want of EXPECTED_BARS) {
      const bar = m.bars.find((b) => b.start === want.startMs && b.duration === want.durationMs && b.title.startsWith(`${want.title}:`));
      expect(bar, `${want.phase} ${want.host} ${want.title}`).toBeDefined();
      expect(Math.abs(bar!.left - (m.track.left + want.startMs * pxPerMs)), `${want.title} starts at ${want.startMs} ms`).toBeLessThan(1.5);
      expect(Math.abs(bar!.width - want.durationMs * pxPerMs), `${want.title} lasts ${want.durationMs} ms`).toBeLessThan(1.5);
      expect(bar!.height).toBeGreaterThan(5);
    }
    expect(m.bars).toHaveLength(EXPECTED_BARS.length);
    // The page fits the window: nothing of the timeline is pushed off to the side.
    expect(m.pageWidth).toBeLessThanOrEqual(1400);
  });

  it("draws the stop under the gate it stopped, visible, and the stop's colour on that gate alone", () => {
    const failed = m.bars.filter((b) => b.status === 'failed');
    expect(failed.map((b) => [b.kind, b.title])).toEqual([['gate', 'An etcd voter: stopped · 30 s of 60 s']]);
    expect(failed[0].colour).toBe(STOP_RED);
    expect(m.bars.filter((b) => b.colour === STOP_RED)).toHaveLength(1);
    // The same 30 s wait is 1.5 times the founder's 20 s one.
    const founderApi = m.bars.find((b) => b.title.startsWith('The API serves:'))!;
    expect(failed[0].width / founderApi.width).toBeCloseTo(1.5, 1);

    const inRow = m.stops.filter((s) => s.inTimeline);
    expect(inRow.map((s) => [s.cause, s.host])).toEqual([['JOIN_FOUNDER_UNREACHABLE', 'node-3']]);
    const stop = inRow[0];
    expect(stop.border).toBe(STOP_RED);
    expect(stop.height).toBeGreaterThan(60);
    expect(stop.width).toBeGreaterThan(600);
    expect(stop.top).toBeGreaterThanOrEqual(failed[0].top + failed[0].height);
    expect(stop.top - (failed[0].top + failed[0].height)).toBeLessThan(40);
    expect(stop.text).toMatch(/JOIN_FOUNDER_UNREACHABLE on node-3: A joining server cannot reach the founder/);
    expect(stop.text).toMatch(/seen\s+no CA certs after 30 s/);
    expect(stop.text).toMatch(/do\s+Check the founder is up/);
    // And the summary at the top of the page says it first.
    const top = m.stops.find((s) => !s.inTimeline)!;
    expect(top.cause).toBe('JOIN_FOUNDER_UNREACHABLE');
    expect(top.top).toBeLessThan(m.track.top);
  });

  it('paints them: the stopped gate and the stop in red, a wait in purple, a change in blue, where they were measured', () => {
    expect([shot.width, shot.height]).toEqual([1400, 1600]);
    const centre = (b: Box) => shot.rgb(b.left + b.width / 2, b.top + b.height / 2);
    const failed = m.bars.find((b) => b.status === 'failed')!;
    expect(centre(failed)).toEqual([211, 47, 47]);
    expect(centre(m.bars.find((b) => b.title.startsWith('The API serves:'))!)).toEqual([106, 27, 154]);
    expect(centre(m.bars.find((b) => b.title.startsWith('Install k3s:') && b.start === 14_000)!)).toEqual([21, 101, 192]);
    const stop = m.stops.find((s) => s.inTimeline)!;
    expect(shot.rgb(stop.left + 2, stop.top + stop.height / 2)).toEqual([211, 47, 47]);
  });
});
