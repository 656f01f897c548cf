// The run report beside the run log (runs/<run-id>.html): the session hands it every event as it emits it,
// stamped with the run's clock, and it writes the page once the run has ended, however it ended. Written
// whole (atomic, 0600) after the run's last secret is known, and redacted with every one of them.
import { writeFileAtomic } from '../util/atomic-file.ts';
import { renderReport } from '../view/report-html.ts';
import type { TimedEvent } from '../view/report-model.ts';
import type { Clock } from './clock.ts';
import type { EngineEvent } from './events.ts';
import type { Redactor } from './run-log.ts';

export class RunReport {
  private readonly events: TimedEvent[] = [];
  constructor(
    readonly file: string,
    private readonly runId: string,
    private readonly clock: Clock,
    private readonly redactor: Redactor,
  ) {}

  record(event: EngineEvent): void {
    this.events.push({ at: this.clock.now(), event });
  }

  write(): void {
    const events = this.events.map((e) => ({ at: e.at, event: JSON.parse(this.redactor.apply(JSON.stringify(e.event))) as EngineEvent }));
    writeFileAtomic(this.file, renderReport(events, { runId: this.runId }));
  }
}
