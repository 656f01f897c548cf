// agents: k3s agents join through the control-plane VIP (not the founder: a dead founder must not stop
// an agent from rejoining), after the VIP answers, in parallel with a bound.
import type { Phase } from '../src/engine/phase.ts';
import { agentRefs } from '../src/inventory/hosts.ts';
import { parallelismOf } from '../src/inventory/parallelism.ts';
import { agentRegistered } from './k3s/agent-gate.ts';
import { installSteps } from './k3s/install-steps.ts';
import { prepareToken, readToken } from '../src/k3s/token.ts';
import { TOKEN_NOT_YET } from './k3s-founder.ts';

export const agents: Phase = {
  id: 'agents',
  title: 'join the agents through the VIP',
  needs: ['kube-vip'],
  hosts: (c) => agentRefs(c.inventory),
  concurrency: (c) => parallelismOf(c.inventory),
  steps: installSteps((_host, ctx) => {
    const token = readToken(ctx.stateDir);
    for (const t of [token?.secret, token?.full]) if (t) ctx.redact(t);
    return token?.full ?? token?.secret ?? TOKEN_NOT_YET;
  }),
  // A malformed token in the state folder stops the run before any host is dialled (TOKEN_MALFORMED).
  prepare: prepareToken,
  gates: [agentRegistered],
};
