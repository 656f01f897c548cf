// k3s-join: the other servers join ONE AT A TIME (through the founder on a cold build, a live server of a running one) (parallel joins break etcd: "too many
// learner members"), each gated on becoming an etcd voter before the next one starts. A server named by
// --replace is first deleted from the cluster and wiped (k3s/replace-steps.ts, which the replace mode puts
// before these steps), then joins like the others.
import type { Phase } from '../src/engine/phase.ts';
import { joinerIsVoter } from './k3s/gates.ts';
import { installSteps } from './k3s/install-steps.ts';
import { prepareToken, readToken } from '../src/k3s/token.ts';
import { TOKEN_NOT_YET } from './k3s-founder.ts';
import { joinTargetPreflight } from './k3s/join-target.ts';

export const k3sJoin: Phase = {
  id: 'k3s-join',
  title: 'join the other servers one at a time',
  needs: ['k3s-founder'],
  hosts: (c) => c.topology.joiners,
  concurrency: 'serial',
  // Where a server without a datastore joins: a live server of the cluster (k3s/join-target.ts), read first.
  preflight: joinTargetPreflight,
  // Joiners carry the full token, which pins the cluster CA; the bare secret only before the founder reported it.
  steps: installSteps((_host, ctx) => {
    const token = readToken(ctx.stateDir);
    for (const t of [token?.secret, token?.full]) if (t) ctx.redact(t);
    return token?.full ?? token?.secret ?? TOKEN_NOT_YET;
  }),
  // A malformed token in the state folder stops the run before any host is dialled (TOKEN_MALFORMED).
  prepare: prepareToken,
  gates: [joinerIsVoter],
};
