// Each named cause of the k3s phases that the lab can produce, by fault injection or an inventory
// variant. Every test asserts the cause id, the host, and that the run ended within the gate's budget.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { beforeAll, expect, it } from 'vitest';
import { fault, hostExec, paths, wipe } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster, stopOf, voters } from '../support/cluster.ts';

const VOTER_BUDGET_MS = 300_000;

/** Only the joiners back to "never installed", the founder's cluster kept. */
async function resetJoiners() {
  for (const h of ['k3s-lab-2', 'k3s-lab-3']) {
    await hostExec(
      h,
      'systemctl stop k3s.service; pkill -9 -x etcd; rm -rf /var/lib/rancher/k3s /etc/rancher /usr/local/bin/k3s /etc/systemd/system/k3s.service; systemctl daemon-reload; systemctl reset-failed; true',
    );
  }
  // The founder forgets members that never finished joining (as `kubectl delete node` would).
  await hostExec('k3s-lab-1', 'for n in k3s-lab-2 k3s-lab-3; do k3s kubectl delete node $n --ignore-not-found; done; true');
}

describeAsRoot('k3s-join names its causes', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    const r = await bootstrap(['--until', 'k3s-founder'], { stateDir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  // The joiner's etcd fetches the cluster's membership from the existing members' peer port (2380):
  // the founder's port blocked is what makes a joiner log "cannot fetch cluster info from peer urls".
  it('a blocked etcd peer port → ETCD_PEER_UNREACHABLE', async () => {
    await fault('k3s-lab-1', 'block-port', '2380');
    try {
      const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir });
      expect(stopOf(r)).toMatchObject({ cause: 'ETCD_PEER_UNREACHABLE', host: 'k3s-lab-2' });
      expect(r.code).toBe(1);
      expect(r.ms).toBeLessThan(VOTER_BUDGET_MS);
    } finally {
      await fault('k3s-lab-1', 'unblock-port', '2380');
      await resetJoiners();
    }
  });

  it('a joiner with another cluster-cidr → CRITICAL_CONFIG_MISMATCH naming cluster-cidr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'variant-'));
    const inv = parse(readFileSync(paths.inventory, 'utf8'));
    inv.k3s.clusterCidr = '10.52.0.0/16';
    writeFileSync(join(dir, 'lab.yaml'), stringify(inv));
    try {
      const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir, inventory: join(dir, 'lab.yaml') });
      const stop = stopOf(r);
      expect(stop).toMatchObject({ cause: 'CRITICAL_CONFIG_MISMATCH', host: 'k3s-lab-2' });
      expect(stop.message).toContain('cluster-cidr');
      expect(r.ms).toBeLessThan(VOTER_BUDGET_MS);
    } finally {
      await resetJoiners();
    }
  });

  it('a founder that is down during the join → JOIN_FOUNDER_UNREACHABLE', async () => {
    await fault('k3s-lab-1', 'stop');
    try {
      const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir });
      expect(stopOf(r)).toMatchObject({ cause: 'JOIN_FOUNDER_UNREACHABLE', host: 'k3s-lab-2' });
      expect(r.events).toContainEqual(expect.objectContaining({ type: 'warning', host: 'k3s-lab-1' }));
      expect(r.ms).toBeLessThan(VOTER_BUDGET_MS);
    } finally {
      await fault('k3s-lab-1', 'start');
      await ensureLab();
      await resetJoiners();
    }
  });

  it('--resume after an interrupt finishes without redoing the founder', async () => {
    await resetCluster();
    const first = await bootstrap(['--until', 'k3s-join', '--json'], {
      stateDir,
      onEvent: (e, child) => {
        if (e.type === 'phase-end' && e.phase === 'k3s-founder') child.kill('SIGINT');
      },
    });
    expect(stopOf(first)).toMatchObject({ cause: 'INTERRUPTED' });
    expect(first.code).toBe(130);
    const resumed = await bootstrap(['--until', 'k3s-join', '--resume', '--json'], { stateDir });
    expect(stopOf(resumed)).toBeUndefined();
    const founderSteps = resumed.events.filter((e) => e.type === 'step-end' && e.phase === 'k3s-founder');
    expect(founderSteps.length).toBeGreaterThan(0);
    expect(founderSteps.every((e) => e.status === 'skipped')).toBe(true);
    expect(await voters()).toEqual({ 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' });
  });

  it('a second cold run after wiping only the founder → EXISTING_CLUSTER_FOUND, nothing initialised', async () => {
    await wipe('k3s-lab-1');
    await ensureLab();
    const r = await bootstrap(['--until', 'k3s-join', '--json'], { stateDir });
    const stop = stopOf(r);
    expect(stop).toMatchObject({ cause: 'EXISTING_CLUSTER_FOUND' });
    expect(stop.host).toBe('k3s-lab-2, k3s-lab-3');
    const founder = await hostExec('k3s-lab-1', 'test -e /var/lib/rancher/k3s/server/db && echo has-db || echo no-db');
    expect(founder.stdout.trim()).toBe('no-db');
    await resetCluster();
  });
});

/** The state folder's token with another secret but the same CA hash: what a mixed-up state folder holds. */
function swapSecret(stateDir: string): () => void {
  const file = join(stateDir, 'lab', 'cluster-token.json');
  const original = readFileSync(file, 'utf8');
  const token = JSON.parse(original) as { secret: string; full: string };
  const wrong = 'f'.repeat(token.secret.length);
  writeFileSync(file, JSON.stringify({ secret: wrong, full: token.full.replace(/:[^:]+$/, `:${wrong}`) }), { mode: 0o600 });
  return () => writeFileSync(file, original, { mode: 0o600 });
}

const gateDuration = (r: Awaited<ReturnType<typeof bootstrap>>, host: string) =>
  r.events.find((e) => e.type === 'gate-end' && e.host === host && e.status === 'failed')?.durationMs;

describeAsRoot('a wrong secret with the right CA hash is TOKEN_REJECTED, servers and agents', () => {
  const stateDir = freshStateDir();

  beforeAll(async () => {
    await ensureLab({ agents: 1 });
    await resetCluster();
    const r = await bootstrap(['--until', 'k3s-founder'], { stateDir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  // k3s only warns when its config request is refused, then fails on the bootstrap request, and
  // systemd starts it again every 5 s: the gate names it from the first refusal, not at its budget.
  it('a joiner → TOKEN_REJECTED within 60 s of the first refusal', async () => {
    const restore = swapSecret(stateDir);
    try {
      const r = await bootstrap(['--only', 'k3s-join', '--json'], { stateDir });
      expect(stopOf(r)).toMatchObject({ cause: 'TOKEN_REJECTED', host: 'k3s-lab-2' });
      expect(gateDuration(r, 'k3s-lab-2')).toBeLessThan(60_000);
      const journal = await hostExec('k3s-lab-2', 'journalctl -u k3s.service --no-pager -o cat');
      expect(journal.stdout).toContain('Skipping cluster configuration validation: ');
      expect(journal.stdout).toMatch(/\/v1-k3s\/server-bootstrap: 401 Unauthorized/);
    } finally {
      restore();
      await resetJoiners();
    }
  });

  // An agent never exits on it: it retries its config request at info level every 5–10 s.
  it('an agent → TOKEN_REJECTED within 60 s of the first refusal', async () => {
    const built = await bootstrap(['--until', 'kube-vip'], { stateDir });
    expect(built.code, built.stdout + built.stderr).toBe(0);
    const restore = swapSecret(stateDir);
    try {
      const r = await bootstrap(['--only', 'agents', '--json'], { stateDir });
      expect(stopOf(r)).toMatchObject({ cause: 'TOKEN_REJECTED', host: 'k3s-lab-agent-1' });
      expect(gateDuration(r, 'k3s-lab-agent-1')).toBeLessThan(60_000);
      const journal = await hostExec('k3s-lab-agent-1', 'journalctl -u k3s-agent.service --no-pager -o cat');
      expect(journal.stdout).toMatch(
        /Waiting to retrieve agent configuration; server is not ready: failed to retrieve configuration from server: \S+\/v1-k3s\/config: 401 Unauthorized/,
      );
    } finally {
      restore();
      await resetCluster();
    }
  });
});
