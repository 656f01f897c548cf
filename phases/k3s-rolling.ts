// rolling-servers and rolling-agents: a change that restarts k3s on a RUNNING cluster (a new k3s.version, a
// changed flag, SAN or unit) goes through here, before k3s-founder, k3s-join and agents, which then find
// nothing left to change. One server at a time, the VIP holder last; then the agents, `k3s.rollingAgents` at
// once. Before the first restart the path is judged (no downgrade, no skipped minor, the etcd 3.5.26 waypoint)
// and a backup is taken; before each restart the others must hold quorum and the node is drained; after it
// the host must be back (phases/k3s/rolling-gates.ts) before the next one is touched, and is uncordoned.
// On a cold build (no running cluster) both plan nothing.
import type { Phase } from '../src/engine/phase.ts';
import { agentRefs, serverRefs } from '../src/inventory/hosts.ts';
import { prepareToken, readToken } from '../src/k3s/token.ts';
import { installSteps, type TokenSource } from './k3s/install-steps.ts';
import { backAfterRestart } from './k3s/rolling-gates.ts';
import { uncordonStep } from './k3s/rolling-evict.ts';
import { checkServers, holderLast, prepareTarget, serverProbes, whenRunning } from './k3s/rolling-preflight.ts';
import { targetBinary } from './k3s/rolling-facts.ts';
import { rollingStep } from './k3s/rolling-step.ts';
import { stateTokenSha, stateTokenShaOf, TOKEN_NOT_YET } from './k3s-founder.ts';

/**
 * The token each host's config carries, as k3s-founder, k3s-join and agents render it (so a converged host
 * plans no change here): the bare secret on the founder, the full token elsewhere.
 */
const rollingToken: TokenSource = (host, ctx) => {
  const token = readToken(ctx.stateDir);
  for (const t of [token?.secret, token?.full]) if (t) ctx.redact(t);
  if (host.name === ctx.topology.founder.name) return token?.secret ?? TOKEN_NOT_YET;
  return token?.full ?? token?.secret ?? TOKEN_NOT_YET;
};

const prepare: Phase['prepare'] = async (ctx) => {
  const { stops } = await prepareToken(ctx);
  if (stops.length) return { stops };
  return { stops, facts: [targetBinary(await prepareTarget(ctx)), stateTokenSha(stateTokenShaOf(ctx.stateDir))] };
};

export const rollingServers: Phase = {
  id: 'rolling-servers',
  title: 'roll a k3s change through the running servers, one at a time, the VIP holder last',
  needs: ['node-baseline'],
  hosts: (c) => serverRefs(c.inventory),
  concurrency: 'serial',
  prepare,
  preflight: { probe: (h, ctx) => serverProbes(ctx.facts.need(targetBinary), h.name === ctx.topology.founder.name), check: checkServers },
  order: holderLast,
  steps: [rollingStep(installSteps(rollingToken))],
  gates: [backAfterRestart],
  afterGates: [uncordonStep],
};

export const rollingAgents: Phase = {
  id: 'rolling-agents',
  title: 'roll a k3s change through the running agents, k3s.rollingAgents at a time',
  needs: ['rolling-servers'],
  hosts: (c) => agentRefs(c.inventory),
  concurrency: (c) => c.inventory.inventory.k3s.rollingAgents ?? 1,
  order: whenRunning,
  prepare,
  steps: [rollingStep(installSteps(rollingToken))],
  gates: [backAfterRestart],
  afterGates: [uncordonStep],
};
