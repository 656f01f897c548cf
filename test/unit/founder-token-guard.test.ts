// The founder keeps its token: a run whose state folder has none, or another, stops before any change.
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { tokenStops } from '../../phases/k3s-founder.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

it('stops on a running founder whose token the state folder lacks or differs from, never when they agree', () => {
  expect(tokenStops('k3s-prod-1', sha('s3cr3t'), sha('s3cr3t'))).toEqual([]);
  const none = tokenStops('k3s-prod-1', sha('s3cr3t'), null);
  expect(none.map((c) => [c.causeId, c.host, c.evidence.seen])).toEqual([
    [
      'STATE_TOKEN_MISMATCH',
      'k3s-prod-1',
      "the founder runs a cluster, but this state folder has no cluster token (a fresh state folder, or another operator's machine)",
    ],
  ]);
  expect(tokenStops('k3s-prod-1', sha('s3cr3t'), sha('other'))[0].evidence.seen).toBe(
    'the founder runs a cluster whose token is not the one in this state folder',
  );
  // No token file on the host (nothing printed), or no prepare fact: no verdict.
  expect(tokenStops('k3s-prod-1', '', null)).toEqual([]);
  expect(tokenStops('k3s-prod-1', sha('s3cr3t'), undefined)).toEqual([]);
});
