// k3s-founder: install k3s on the founder and initialise the cluster — unless some server already
// holds this environment's datastore while the founder does not (then cluster-init would split it).
import { CauseError } from '../src/errors.ts';
import type { Phase } from '../src/engine/phase.ts';
import { founderRef, serverRefs } from './hosts.ts';
import { founderApiReady } from './k3s/gates.ts';
import { installSteps } from './k3s/install-steps.ts';
import { DB_DIR } from './k3s/render.ts';
import { ensureToken, prepareToken } from './k3s/token.ts';

/** What a config shows before the first run created the token (check mode never creates one). */
export const TOKEN_NOT_YET = '<generated at the first run>';

export const k3sFounder: Phase = {
  id: 'k3s-founder',
  title: 'install k3s on the founder and initialise the cluster',
  needs: ['node-baseline'],
  hosts: (c) => founderRef(c.inventory),
  concurrency: 'serial',
  preflight: {
    hosts: (c) => serverRefs(c.inventory),
    probe: () => ({ datastore: { command: `test -d ${DB_DIR}/etcd && echo present`, sudo: true } }),
    check: (seen) => {
      const holders = [...seen].filter(([, p]) => p.datastore.stdout.trim() === 'present').map(([h]) => h);
      if (!holders.length || holders.some((h) => h.founder)) return [];
      return [
        new CauseError('EXISTING_CLUSTER_FOUND', {
          host: holders.map((h) => h.name).join(', '),
          evidence: {
            command: `test -d ${DB_DIR}/etcd`,
            seen: `${holders.map((h) => h.name).join(', ')} hold${holders.length === 1 ? 's' : ''} a k3s datastore; the founder ${[...seen.keys()].find((h) => h.founder)?.name} does not`,
          },
        }),
      ];
    },
  },
  steps: installSteps((_host, ctx) => {
    const token = ensureToken(ctx.stateDir, { create: !ctx.check });
    if (token) ctx.redact(token.secret);
    return token?.secret ?? TOKEN_NOT_YET;
  }),
  // A malformed token in the state folder stops the run before any host is dialled (TOKEN_MALFORMED).
  prepare: prepareToken,
  gates: [founderApiReady],
};
