// An agent has joined when its Node exists. Its journal names a failure at once (a rebuilt host with the
// same name, a token of another cluster, the VIP unreachable), as for servers.
import { CauseError } from '../../src/errors.ts';
import type { Gate } from '../../src/engine/phase.ts';
import { founderRef } from '../hosts.ts';
import { matchJoinFailure } from './journal-causes.ts';
import { excerpt, journalSince, kubectl, pause } from './remote-k3s.ts';

export const agentRegistered: Gate = {
  id: 'agent-registered',
  title: 'agent registered its Node through the VIP',
  budgetMs: 180_000,
  async run(host, ctx, signal) {
    const founder = founderRef(ctx.inventory)[0];
    const cursor = ctx.facts.get<string>(host.name, 'journalCursor');
    do {
      const res = await kubectl(ctx, founder, `get node ${host.name} -o name`, 10_000).catch(() => undefined);
      if (res?.code === 0 && res.stdout.trim()) return;
      const journal = await journalSince(ctx, host, cursor);
      const known = matchJoinFailure(journal);
      if (known && !known.transient) {
        // An agent dials the VIP, not the founder: "failed to get CA certs" means the VIP did not answer it.
        const id = known.id === 'JOIN_FOUNDER_UNREACHABLE' ? 'VIP_NOT_ANSWERING' : known.id;
        throw new CauseError(id, { host: host.name, evidence: { command: 'journalctl -u k3s-agent.service', seen: known.line, excerpt: excerpt(journal, 15) } });
      }
    } while (await pause(ctx, 2_000, signal));
    const journal = await journalSince(ctx, host, cursor).catch(() => '');
    throw new CauseError('AGENT_NOT_REGISTERED', { host: host.name, evidence: { command: `k3s kubectl get node ${host.name}`, seen: 'no Node of this name', excerpt: excerpt(journal) } });
  },
};
