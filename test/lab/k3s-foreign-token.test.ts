// Mixed-up state, as it happens to operators: a join with another cluster's token (the state folder of
// another build). Named from k3s's journal, with the host, within the voter budget.
import { beforeAll, expect, it } from 'vitest';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster, stopOf } from '../support/cluster.ts';

const VOTER_BUDGET_MS = 300_000;

describeAsRoot('k3s-join names a foreign token', () => {
  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
  });

  it("a token pinning another cluster's CA → TOKEN_CA_MISMATCH", async () => {
    const first = freshStateDir();
    expect((await bootstrap(['--until', 'k3s-founder'], { stateDir: first })).code).toBe(0);
    // A second cluster on the same founder; joins then run with the FIRST cluster's state (its CA-pinned token).
    await resetCluster();
    expect((await bootstrap(['--until', 'k3s-founder'], { stateDir: freshStateDir() })).code).toBe(0);
    const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir: first });
    expect(stopOf(r)).toMatchObject({ cause: 'TOKEN_CA_MISMATCH', host: 'k3s-lab-2' });
    expect(r.ms).toBeLessThan(VOTER_BUDGET_MS);
    await resetCluster();
  });
});
