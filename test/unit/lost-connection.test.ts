// A host that vanishes while a step runs (power cut, cable pulled): the transport ends the command as lost
// (ExecResult.lost) once the SSH keepalives go unanswered, and the run stops with SSH_UNREACHABLE naming the
// host, never with APPLY_FAILED "did not finish within its budget", PROBE_FAILED or, for the restore's
// cluster-reset, CLUSTER_RESET_FAILED (the reset did not fail: nobody knows how far it got).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CauseError } from '../../src/errors.ts';
import { applyChange, applyPlan } from '../../src/engine/apply.ts';
import { emptySummary, runPhases } from '../../src/engine/run.ts';
import type { Phase } from '../../src/engine/phase.ts';
import type { ExecOptions, ExecResult, Remote } from '../../src/transport/types.ts';
import { loadInventory } from '../../src/inventory/index.ts';
import { resolveBackup, writeBackup, type BackupManifest } from '../../src/backup/store.ts';
import { restoreStep } from '../../phases/k3s/restore-founder.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { fixture, hosts, inventoryContext } from '../support/engine-fixture.ts';

/** A host whose connection is lost at the command matching `lostAt` (those before it exit 0, or `code`). */
function vanishing(host: string, lostAt: RegExp, code: (command: string) => number = () => 0): Remote & { ran: string[] } {
  const ran: string[] = [];
  return {
    host,
    ran,
    async exec(command: string, _opts?: ExecOptions): Promise<ExecResult> {
      ran.push(command);
      if (lostAt.test(command)) return { command, stdout: '', stderr: '', code: null, durationMs: 31_000, lost: true };
      return { command, stdout: '', stderr: '', code: code(command), durationMs: 1 };
    },
    async close() {},
  };
}

const causeOf = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CauseError);
  return err as CauseError;
};

describe('a connection lost while a step runs', () => {
  it('a command, a file write and an upload stop with SSH_UNREACHABLE naming the host', async () => {
    const remote = vanishing('k3s-lab-3', /./);
    const command = await causeOf(applyChange(remote, { kind: 'command', description: 'stop k3s', command: 'systemctl stop k3s.service', sudo: true }));
    expect(command).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: 'k3s-lab-3', message: 'lost the SSH connection to k3s-lab-3 while a command ran' });
    expect(command.evidence).toMatchObject({ command: 'systemctl stop k3s.service' });
    expect(command.evidence.seen).toContain('stopped answering its SSH keepalives');
    const file = await causeOf(
      applyChange(remote, { kind: 'file', path: '/var/lib/rancher/k3s/server/bootstrap-restored-from', content: 'b1\n', current: null, mode: '0600' }),
    );
    expect(file).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: 'k3s-lab-3' });
    expect(file.evidence.command).toBe('write /var/lib/rancher/k3s/server/bootstrap-restored-from');
    // A command holding a secret is not shown, lost or not.
    const secret = await causeOf(applyChange(remote, { kind: 'command', description: 'x', command: 'echo TOKEN', secret: true }));
    expect(secret.evidence.command).toBe('(command holding a secret)');
  });

  it('a command that overran its budget is still APPLY_FAILED (the host answered, the command did not end)', async () => {
    const remote: Remote = {
      host: 'h',
      exec: async (command) => ({ command, stdout: '', stderr: '', code: null, durationMs: 120_000 }),
      close: async () => {},
    };
    const err = await causeOf(applyChange(remote, { kind: 'command', description: 'x', command: 'sleep 999' }));
    expect(err).toMatchObject({ causeId: 'APPLY_FAILED', host: 'h' });
    expect(err.evidence.seen).toBe('the command did not finish within its budget');
  });

  it("a phase's probe batch lost: SSH_UNREACHABLE, not PROBE_FAILED", async () => {
    const [h1] = hosts('h1');
    const f = fixture({ check: false, hosts: [h1] });
    const remote = vanishing('h1', /^sh -s$/);
    f.ctx.remote = () => remote;
    const phase: Phase = {
      id: 'p',
      title: 'p',
      needs: [],
      hosts: () => [h1],
      concurrency: 1,
      steps: [{ id: 's', title: 's', probe: () => ({ a: { command: 'true' } }), plan: () => ({ changes: [] }) }],
    };
    const err = await causeOf(runPhases({ phases: [phase], ctx: f.ctx, summary: emptySummary(false) }));
    expect(err).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: 'h1' });
    expect(err.evidence.command).toBe('sh -s (1 read-only probes)');
  });

  it("the restore's cluster-reset lost with the founder: SSH_UNREACHABLE (its own failure stays CLUSTER_RESET_FAILED)", async () => {
    const inventory = await loadInventory('inventory/prod.yaml');
    const stateDir = mkdtempSync(join(tmpdir(), 'lost-connection-'));
    const manifest: BackupManifest = {
      id: 'b1',
      env: 'prod',
      takenAt: '',
      k3sVersion: inventory.inventory.k3s.version,
      snapshotServer: 'x',
      servers: [],
      snapshotName: 'n',
      sha256: 'aa'.repeat(32),
      bytes: 4,
      objects: [],
      counts: {},
    };
    const backup = resolveBackup(writeBackup(stateDir, manifest, Buffer.from('snap'), { secret: 's3cret' }), stateDir);
    const [founder] = serverRefs(inventory);
    const step = restoreStep(backup);
    const applyWith = async (remote: Remote) => {
      const ctx = inventoryContext(inventory, { stateDir, remote: () => remote });
      const plan = step.plan({
        host: founder,
        ctx,
        local: undefined,
        probe: {
          marker: { stdout: '', stderr: '', code: 0 },
          active: { stdout: 'inactive', stderr: '', code: 3 },
          ready: { stdout: 'refused', stderr: '', code: 1 },
        },
      });
      return causeOf(applyPlan(plan.changes, founder, ctx, { phase: 'k3s-founder', step: step.id }));
    };
    const lost = await applyWith(vanishing(founder.name, /--cluster-reset/));
    expect(lost).toMatchObject({ causeId: 'SSH_UNREACHABLE', host: founder.name });
    expect(lost.evidence.command).toContain('--cluster-reset');
    const failed = await applyWith(vanishing(founder.name, /^$/, (c) => (/--cluster-reset/.test(c) ? 1 : 0)));
    expect(failed).toMatchObject({ causeId: 'CLUSTER_RESET_FAILED', host: founder.name });
  });
});
