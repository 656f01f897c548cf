// k3s-founder: install k3s on the founder and initialise the cluster — unless some server already
// holds this environment's datastore while the founder does not (then cluster-init would split it).
import { createHash } from 'node:crypto';
import { CauseError } from '../src/errors.ts';
import { runFact } from '../src/engine/facts.ts';
import type { Phase } from '../src/engine/phase.ts';
import { clusterAccess, founderApiReady } from './k3s/gates.ts';
import { installSteps } from './k3s/install-steps.ts';
import { DB_DIR, TOKEN_FILE } from '../src/k3s/paths.ts';
import { newToken, prepareToken, readToken } from '../src/k3s/token.ts';

/** What a config shows before the first run created the token (check mode never creates one). */
export const TOKEN_NOT_YET = '<generated at the first run>';

/**
 * The sha256 of the state folder's token secret (null: the folder holds none), from the prepare. Absent when
 * another prepare stands in for it (a restore brings the backup's token): then no token is compared.
 */
export const stateTokenSha = runFact<string | null>('k3s-founder.stateTokenSha');

/**
 * The sha256 of the secret part of a server's token (K10<ca hash>::server:<secret>): compared with the state
 * folder's, so that the secret itself never leaves the host.
 */
export const TOKEN_SECRET_PROBE = `test -f ${TOKEN_FILE} && printf %s "$(sed -n 's/^.*::server://p' ${TOKEN_FILE})" | sha256sum | cut -d' ' -f1`;

/** The sha256 of the state folder's token secret, or null when it holds none. */
export function stateTokenShaOf(stateDir: string): string | null {
  const token = readToken(stateDir);
  return token ? sha256(token.secret) : null;
}

export const k3sFounder: Phase = {
  id: 'k3s-founder',
  title: 'install k3s on the founder and initialise the cluster',
  // After a rolling change of a running cluster (k3s-rolling.ts), which leaves nothing here to change.
  needs: ['node-baseline', 'rolling-agents'],
  hosts: (c) => [c.topology.founder],
  concurrency: 'serial',
  preflight: {
    hosts: (c) => c.topology.servers,
    probe: () => ({
      datastore: { command: `test -d ${DB_DIR}/etcd && echo present`, sudo: true },
      tokenSecret: { command: TOKEN_SECRET_PROBE, sudo: true },
    }),
    check: (seen, ctx) => {
      const holders = [...seen].filter(([, p]) => p.datastore.stdout.trim() === 'present').map(([h]) => h);
      const founder = [...seen].find(([h]) => h.founder);
      if (founder && holders.includes(founder[0])) return tokenStops(founder[0].name, founder[1].tokenSecret.stdout.trim(), ctx.facts.run(stateTokenSha));
      if (!holders.length) return [];
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
  // The environment's token, or a new one the config step's plan keeps in the state folder before the
  // config that carries it (check mode shows that it would, and writes nothing).
  steps: installSteps((_host, ctx) => {
    const stored = readToken(ctx.stateDir);
    if (stored) {
      ctx.redact(stored.secret);
      return stored.secret;
    }
    if (ctx.check) return { secret: TOKEN_NOT_YET, save: { secret: TOKEN_NOT_YET } };
    const token = newToken();
    ctx.redact(token.secret);
    return { secret: token.secret, save: token };
  }),
  // A malformed token in the state folder stops the run before any host is dialled (TOKEN_MALFORMED);
  // the hash of a well-formed one is what the preflight compares with a running founder's.
  prepare: async (ctx) => {
    const { stops } = await prepareToken(ctx);
    if (stops.length) return { stops };
    return { stops, facts: [stateTokenSha(stateTokenShaOf(ctx.stateDir))] };
  },
  gates: [founderApiReady],
  afterGates: [clusterAccess],
};

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * A founder that already runs a cluster keeps its token: a run whose state folder holds no token (a fresh
 * folder, another machine) or another one would write a new token into its config and restart k3s, which
 * then refuses to start ("bootstrap data already found and encrypted with different token"). Stopped
 * before any change, in check mode too.
 */
export function tokenStops(founder: string, hostSha: string, stateSha: string | null | undefined): CauseError[] {
  if (stateSha === undefined || !/^[0-9a-f]{64}$/.test(hostSha) || hostSha === stateSha) return [];
  return [
    new CauseError('STATE_TOKEN_MISMATCH', {
      host: founder,
      evidence: {
        command: `sha256 of the secret in ${TOKEN_FILE}, against the state folder's cluster-token.json`,
        seen:
          stateSha === null
            ? "the founder runs a cluster, but this state folder has no cluster token (a fresh state folder, or another operator's machine)"
            : 'the founder runs a cluster whose token is not the one in this state folder',
      },
      retryable: false,
    }),
  ];
}
