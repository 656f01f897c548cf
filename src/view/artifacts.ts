// How `bootstrap artifacts` shows its downloads: a redrawn progress bar on a terminal, a line every 10 %
// otherwise (CI logs, pipes), or one JSON object per event (--json; progress at most every 10 % too).
import type { ArtifactEvent } from '../artifacts/fetch.ts';

export interface ArtifactView {
  out: (line: string) => void;
  /** Redraws the terminal's current line; absent when it is not a terminal. */
  status?: (line: string) => void;
  json: boolean;
}

const MiB = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const BAR = 24;
const SMALL = 8 << 20;

function bar(bytes: number, total?: number): string {
  if (!total) return `${MiB(bytes)}`;
  const filled = Math.min(BAR, Math.floor((bytes / total) * BAR));
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR - filled)}] ${Math.floor((bytes / total) * 100)} % of ${MiB(total)}`;
}

/** The step a progress event falls in: 10 % steps, or 8 MiB steps when the size is not known. */
const stepOf = (e: { bytes: number; totalBytes?: number }) => (e.totalBytes ? Math.floor((e.bytes / e.totalBytes) * 10) : Math.floor(e.bytes / (8 << 20)));

export function artifactRenderer(view: ArtifactView): (e: ArtifactEvent) => void {
  const steps = new Map<string, number>();
  let drawn = false;
  const line = (l: string) => {
    if (drawn) view.status?.('');
    drawn = false;
    view.out(l);
  };
  return (e) => {
    if (e.type === 'artifact-progress') {
      if (view.status && !view.json) {
        view.status(`  ${e.key}  ${bar(e.bytes, e.totalBytes)}`);
        drawn = true;
        return;
      }
      // In a log, a small file's progress is noise: its `get` and `placed` lines say enough.
      if (!view.json && (e.bytes === 0 || (e.totalBytes ?? e.bytes) < SMALL)) return;
      const step = stepOf(e);
      // JSON says where a download starts (0 %); a log line first at the 10 % mark.
      if (step === (steps.get(e.key) ?? (view.json ? undefined : 0))) return;
      steps.set(e.key, step);
      if (view.json) view.out(JSON.stringify(e));
      else view.out(`  ${e.key}: ${e.totalBytes ? `${Math.floor((e.bytes / e.totalBytes) * 100)} % of ${MiB(e.totalBytes)}` : MiB(e.bytes)}`);
      return;
    }
    if (view.json) return view.out(JSON.stringify(e));
    switch (e.type) {
      case 'artifact-present':
        return line(`ok       ${e.key}: ${e.path}${e.verified ? ' (sha256 verified)' : `; ${e.note}`}`);
      case 'artifact-missing':
        return line(`missing  ${e.key}: ${e.path}\n         would download ${e.url}`);
      case 'artifact-download':
        return line(`get      ${e.key}: ${e.url}${e.resumeFrom ? ` (resuming after ${MiB(e.resumeFrom)})` : ''}`);
      case 'artifact-placed':
        return line(`placed   ${e.key}: ${e.path} (${MiB(e.bytes)}${e.verified ? ', sha256 verified' : `; ${e.note}`})`);
    }
  };
}
