// Whether k3s runs on a host: one probe (`systemctl is-active <unit>`) and one reading of its answer for every
// phase that asks, so the run's probe memo answers them all from one command (src/engine/probe-memo.ts) and no
// two phases disagree about a unit in the same state.
import type { ProbeCommand } from '../engine/probe-types.ts';

export const unitActiveProbe = (unit: string): ProbeCommand => ({ command: `systemctl is-active ${unit}` });

/**
 * Does the unit run? `active`; `activating` (a Type=notify unit such as k3s's until it reports READY=1: it runs,
 * starting); `reloading` (running, on its way back to active). `systemctl start` would change nothing for any of
 * them, so a change that must reach k3s restarts it. Anything else (inactive, failed, deactivating, no answer)
 * is not running.
 */
export const unitRuns = (isActive: string | undefined): boolean => ['active', 'activating', 'reloading'].includes((isActive ?? '').trim());
