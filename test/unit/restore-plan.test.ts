// The restore's plans as pure data: what the founder and the other servers would do for a backup, what a
// rerun after a finished restore does (nothing), and the prepare's stops before any host is touched.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/engine/context.ts';
import { Facts } from '../../src/engine/facts.ts';
import { restoredNow } from '../../phases/k3s/facts.ts';
import { systemClock } from '../../src/engine/clock.ts';
import type { CommandChange } from '../../src/engine/changes.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { loadInventory } from '../../src/inventory/index.ts';
import { resolveBackup, writeBackup, type BackupManifest } from '../../src/backup/store.ts';
import { restoreStep } from '../../phases/k3s/restore-founder.ts';
import { restoreComplete } from '../../phases/k3s/restore-gate.ts';
import { wipeForRejoinStep } from '../../phases/k3s/restore-join.ts';
import { insertBefore } from '../../modes/compose.ts';
import { restorePhases } from '../../modes/restore.ts';
import { forgetNodePasswordsStep } from '../../phases/k3s/restore-passwords.ts';
import { allPhases } from '../../phases/index.ts';
import { serverRefs, topologyOf } from '../../src/inventory/hosts.ts';

const seen = (out: Record<string, string | [string, number]>): ProbeResults =>
  Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { stdout: Array.isArray(v) ? v[0] : v, stderr: '', code: Array.isArray(v) ? v[1] : 0 }]));

async function setup(sha = 'aa'.repeat(32)) {
  const inventory = await loadInventory('inventory/prod.yaml');
  const stateDir = mkdtempSync(join(tmpdir(), 'restore-plan-'));
  const manifest: BackupManifest = {
    id: '2026-11-30T05-40-12Z',
    env: 'prod',
    takenAt: '',
    k3sVersion: inventory.inventory.k3s.version,
    snapshotServer: 'x',
    servers: [],
    snapshotName: 'n',
    sha256: sha,
    bytes: 1,
    objects: [],
    counts: {},
  };
  const backup = resolveBackup(writeBackup(stateDir, manifest, Buffer.from('snap'), { secret: 's3cret' }), stateDir);
  const facts = new Facts();
  const ctx: RunContext & { facts: Facts } = {
    env: 'prod',
    check: true,
    inventory,
    remote: () => {
      throw new Error('no remote in a plan');
    },
    clock: systemClock,
    emit: () => undefined,
    signal: new AbortController().signal,
    stateDir,
    facts,
    once: (f, compute) => facts.once(f, compute),
    redact: () => undefined,
    topology: topologyOf(inventory),
  };
  const [founder, ...others] = serverRefs(inventory);
  return { ctx, backup, founder, others };
}

describe('restore plans', () => {
  it('the founder: stop the other servers, stop here, upload and check the snapshot, cluster-reset, mark', async () => {
    const { ctx, backup, founder, others } = await setup();
    const plan = restoreStep(backup).plan({
      host: founder,
      ctx,
      local: undefined,
      probe: seen({ marker: '', active: 'active', ready: ['connection refused', 1] }),
    });
    const commands = plan.changes.filter((c): c is CommandChange => c.kind === 'command').map((c) => c.description);
    expect(commands.slice(0, others.length)).toEqual(others.map((o) => `on ${o.name}: stop k3s before the restore (it rejoins later, its datastore wiped)`));
    expect(plan.changes.map((c) => c.kind)).toEqual([...others.map(() => 'command'), 'command', 'upload', 'command', 'command', 'file']);
    const reset = plan.changes.at(-2) as CommandChange;
    expect(reset.command).toBe(
      `/usr/local/bin/k3s server --cluster-reset --cluster-reset-restore-path=/var/lib/rancher/k3s/server/restore/${backup.manifest.id}.db`,
    );
  });

  it('a rerun after the founder was restored from this backup and serves: nothing', async () => {
    const { ctx, backup, founder } = await setup();
    expect(
      restoreStep(backup).plan({ host: founder, ctx, local: undefined, probe: seen({ marker: `${backup.manifest.id}\n`, active: 'active', ready: 'ok' }) })
        .changes,
    ).toEqual([]);
    // Marked but not serving at this moment (k3s restarting after a power cut): never reset again, which
    // would wipe what the cluster wrote since; the service step starts k3s, the API gate waits for it.
    expect(
      restoreStep(backup).plan({
        host: founder,
        ctx,
        local: undefined,
        probe: seen({ marker: `${backup.manifest.id}\n`, active: 'failed', ready: ['refused', 1] }),
      }).changes,
    ).toEqual([]);
    // Marked with another backup: this restore runs.
    expect(
      restoreStep(backup).plan({ host: founder, ctx, local: undefined, probe: seen({ marker: 'an-older-backup\n', active: 'active', ready: 'ok' }) }).changes
        .length,
    ).toBeGreaterThan(3);
  });

  it('another server: stop, WIPE its datastore, mark; nothing once it rejoined after this backup', async () => {
    const { ctx, backup, others } = await setup();
    const step = wipeForRejoinStep(backup);
    const host: HostRef = others[0];
    const plan = step.plan({ host, ctx, local: undefined, probe: seen({ marker: '', active: 'active', db: 'present' }) });
    expect(plan.changes.map((c) => (c.kind === 'command' ? c.command : c.kind))).toEqual([
      'systemctl stop k3s.service',
      'rm -rf /var/lib/rancher/k3s/server/db',
      'file',
    ]);
    // A reinstalled host: nothing to stop, nothing to wipe, only the mark.
    expect(step.plan({ host, ctx, local: undefined, probe: seen({ marker: '', active: ['inactive', 3], db: '' }) }).changes.map((c) => c.kind)).toEqual([
      'file',
    ]);
    // Marked and running, starting or reloading: it rejoined the restored cluster, its datastore stays.
    for (const state of ['active', 'activating', 'reloading'])
      expect(step.plan({ host, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, active: state, db: 'present' }) }).changes, state).toEqual([]);
    // Marked but not running (a rejoin cut short): stopped already, wiped again, joined again.
    expect(
      step.plan({ host, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, active: ['failed', 3], db: 'present' }) }).changes.map((c) => c.kind),
    ).toEqual(['command', 'command', 'file']);
  });

  it("the founder, once restored: the snapshot's node-password Secrets of every node go (agents too), only those older than the restore", async () => {
    const { ctx, backup, founder } = await setup();
    (ctx.inventory.derived.agents as { name: string; address: string }[]).push({ name: 'k3s-prod-agent-1', address: '192.168.2.20' } as never);
    const step = forgetNodePasswordsStep(backup);
    const nodes = ['k3s-prod-1', 'k3s-prod-2', 'k3s-prod-3', 'k3s-prod-agent-1'];
    // Check mode before the restore (no marker yet): every node's Secret is planned to go, through the founder.
    const before = step.plan({ host: founder, ctx, local: undefined, probe: seen({ marker: '', restoredAt: '', secrets: ['connection refused', 1] }) });
    expect(before.changes).toHaveLength(1);
    const del = before.changes[0] as CommandChange;
    expect(del.description).toBe(
      `delete the node-password Secrets of ${nodes.join(', ')} (from the backup; each node records its current password when it registers again)`,
    );
    expect(del.command).toContain(
      `/usr/local/bin/k3s kubectl delete secret -n kube-system --ignore-not-found ${nodes.map((n) => `${n}.node-password.k3s`).join(' ')}`,
    );
    expect(del.command).not.toMatch(/delete node/);
    // Restored at t=1000 s: the Secrets made before it are the old hosts'; those made after are the nodes' own.
    const at = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const listing = [
      `k3s-prod-1.node-password.k3s ${at(400)}`,
      `k3s-prod-2.node-password.k3s ${at(1200)}`,
      `k3s-prod-3.node-password.k3s ${at(1300)}`,
      `k3s-prod-agent-1.node-password.k3s ${at(500)}`,
      `other ${at(1)}`,
    ].join('\n');
    const after = step.plan({ host: founder, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, restoredAt: '1000', secrets: listing }) });
    expect((after.changes[0] as CommandChange).command).toContain('--ignore-not-found k3s-prod-1.node-password.k3s k3s-prod-agent-1.node-password.k3s');
    // A rerun after every node registered again (or whose Secret is gone): nothing.
    const rerun = [
      `k3s-prod-2.node-password.k3s ${at(1200)}`,
      `k3s-prod-3.node-password.k3s ${at(1300)}`,
      `k3s-prod-agent-1.node-password.k3s ${at(1400)}`,
    ].join('\n');
    expect(
      step.plan({ host: founder, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, restoredAt: '1000', secrets: rerun }) }).changes,
    ).toEqual([]);
    // Restored in an earlier run but the API does not answer: nothing here (the restore-complete gate names it).
    expect(
      step.plan({ host: founder, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, restoredAt: '1000', secrets: ['refused', 1] }) }).changes,
    ).toEqual([]);
    // Restored in THIS run (the restore step's fact), the API not answering yet: every node's Secret goes.
    ctx.facts.setHost(founder.name, [restoredNow(true)]);
    expect(
      (
        step.plan({ host: founder, ctx, local: undefined, probe: seen({ marker: backup.manifest.id, restoredAt: '1000', secrets: ['refused', 1] }) })
          .changes[0] as CommandChange
      ).description,
    ).toBe(del.description);
  });

  it('the restore mode places its steps by id: the restore before k3s starts, the node passwords after; the wipe first on the others', async () => {
    const { backup } = await setup();
    const phases = restorePhases(allPhases(), backup);
    const ids = (id: string) => phases.find((p) => p.id === id)!.steps.map((s) => s.id);
    expect(ids('k3s-founder')).toEqual(['binary', 'images', 'config', 'unit', 'env', 'restore', 'service', 'restore-node-passwords']);
    expect(ids('k3s-join')).toEqual(['restore-wipe', 'binary', 'images', 'config', 'unit', 'env', 'service']);
    expect(() => insertBefore(phases[0].steps, 'no-such-step', restoreStep(backup))).toThrow(/no step no-such-step among/);
  });

  it('prepare stops a corrupted snapshot and another token in the state folder, before any host', async () => {
    const { ctx, backup } = await setup('bb'.repeat(32));
    writeFileSync(join(ctx.stateDir, 'cluster-token.json'), JSON.stringify({ secret: 'another' }));
    const founderPhase = restorePhases(allPhases(), backup).find((p) => p.id === 'k3s-founder')!;
    expect(founderPhase.preflight).toBeUndefined();
    const { stops } = await founderPhase.prepare!(ctx);
    expect(stops.map((s) => s.causeId)).toEqual(['SNAPSHOT_CHECKSUM_MISMATCH', 'RESTORE_TOKEN_CONFLICT']);
  });

  it('RESTORE_INCOMPLETE names the objects of the manifest the restored API does not have', async () => {
    const { ctx, backup, founder } = await setup();
    // The node-password Secrets the restore deletes on purpose are not expected back.
    backup.manifest.objects = ['ConfigMap/app/a', 'ConfigMap/app/b', 'Widget/app/w', 'Namespace//app', 'Secret/kube-system/k3s-prod-2.node-password.k3s'];
    const listing = 'ConfigMap app a\nNamespace  app\n';
    const remote = {
      host: founder.name,
      exec: async () => ({ command: '', stdout: listing, stderr: '', code: 0, durationMs: 1 }),
      close: async () => undefined,
    };
    const ended = new AbortController();
    ended.abort();
    const gate = restoreComplete(backup);
    const err = await gate.run(founder, { ...ctx, remote: () => remote }, ended.signal).catch((e) => e);
    expect(err.causeId).toBe('RESTORE_INCOMPLETE');
    expect(err.message).toBe("2 of the backup's 5 objects are missing after the restore");
    expect(err.evidence.excerpt).toBe('ConfigMap/app/b\nWidget/app/w');
    // Everything there: the gate passes at the first look.
    await expect(
      gate.run(
        founder,
        {
          ...ctx,
          remote: () => ({
            ...remote,
            exec: async () => ({ command: '', stdout: listing + 'ConfigMap app b\nWidget app w\n', stderr: '', code: 0, durationMs: 1 }),
          }),
        },
        ended.signal,
      ),
    ).resolves.toBeUndefined();
  });

  it('RESTORE_INCOMPLETE once the same objects are missing in 4 listings in a row, without sitting out the budget', async () => {
    const { ctx, backup, founder } = await setup();
    backup.manifest.objects = ['ConfigMap/app/a', 'ConfigMap/app/gone'];
    let listings = 0;
    const remote = {
      host: founder.name,
      exec: async () => (listings++, { command: '', stdout: 'ConfigMap app a\n', stderr: '', code: 0, durationMs: 1 }),
      close: async () => undefined,
    };
    const clock = { now: () => Date.now(), sleep: async () => undefined };
    const err = await restoreComplete(backup)
      .run(founder, { ...ctx, clock, remote: () => remote }, new AbortController().signal)
      .catch((e) => e);
    expect(err.causeId).toBe('RESTORE_INCOMPLETE');
    expect(err.evidence.excerpt).toBe('ConfigMap/app/gone');
    expect(listings).toBe(4);
  });
});
