// `--json`: one JSON object per line, one line per engine event (the event types are in engine/events.ts).
import type { EngineEvent } from '../engine/events.ts';

export function jsonRenderer(write: (line: string) => void): (e: EngineEvent) => void {
  return (e) => write(JSON.stringify(e));
}
