// The facts of a rolling change (phases/k3s-rolling.ts): what its preflight saw across the servers, what the
// operator chose, and what each host's plan decided.
import type { ReadContext } from '../../src/engine/context.ts';
import { hostFact, runFact } from '../../src/engine/facts.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';

/** The release the run installs: k3s.version, and the etcd version and sha256 of the binary in k3s.artifacts. */
export interface TargetBinary {
  version: string;
  etcd?: string;
  sha256: string;
}

export const targetBinary = runFact<TargetBinary>('k3s-rolling.target');

/** What the servers' preflight saw: is a multi-server cluster running, and who holds the VIP. */
export interface RollingView {
  /** At least two servers hold a datastore and run k3s: restarts there are rolling (drained, gated). */
  running: boolean;
  /** The servers that run k3s on a datastore. */
  members: string[];
  /** The kube-vip lease holder, when one answered. */
  holder?: string;
}

export const rollingView = runFact<RollingView>('k3s-rolling.view');

/** The nodes a rolling change cordoned and has not uncordoned yet (a run that stopped): read by the preflight. */
export const cordonedByRun = runFact<string[]>('k3s-rolling.cordoned');

/** The operator's choices for a rolling change: the backup taken first (`--no-backup` skips it), and its id. */
export interface RollingOptions {
  backup: boolean;
  backupId: string;
}

export const rollingOptions = runFact<RollingOptions>('k3s-rolling.options');

/**
 * The build's selection leaves the rolling change out (--from or --only past rolling-servers): a running node
 * whose k3s would change is not the install phases' to restart (phases/k3s/install-steps.ts).
 */
export const rollingLeftOut = runFact<boolean>('k3s-rolling.left-out');

/** This host's k3s restarts in this run's rolling change (drained first, gated after). */
export const rollingRestart = hostFact<boolean>('rollingRestart');
/** The backup before the rolling change was planned on this host (the first that restarts). */
export const rollingBackup = hostFact<string>('rollingBackup');

/**
 * A server that answers for the cluster while `host` is worked on: the first running member other than it, in
 * inventory order (`host` itself when there is none).
 */
export function otherMember(host: HostRef, ctx: Pick<ReadContext, 'inventory'>, view: Pick<RollingView, 'members'> | undefined): HostRef {
  const members = view?.members ?? [];
  return serverRefs(ctx.inventory).find((s) => s.name !== host.name && members.includes(s.name)) ?? host;
}
