// What a log matcher found: the cause a log line shows, and the line (kube-vip's and Cilium's log readers).
import type { CauseId } from './catalogue.ts';

export interface LogMatch {
  causeId: CauseId;
  /** The log line that showed it. */
  line: string;
}
