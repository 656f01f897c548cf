// The k3s install's service step records where the unit's journal stands, so that its gates read only what
// k3s logs after this point: the cursor is journalctl's own `-- cursor:` line, picked out by the engine.
// Its steps that restart k3s refuse a running node when the build leaves the rolling change out (--from/--only).
import { describe, expect, it } from 'vitest';
import { allPhases, validatedOrder } from '../../phases/index.ts';
import { installSteps } from '../../phases/k3s/install-steps.ts';
import { configChanged, journalCursor } from '../../phases/k3s/facts.ts';
import { rollingLeftOut } from '../../phases/k3s/rolling-facts.ts';
import { withRollingOptions } from '../../modes/build.ts';
import type { RunPlan } from '../../src/engine/session.ts';

describe('where the journal stands', () => {
  it("takes the cursor from journalctl's own `-- cursor:` line (no sed on the host)", async () => {
    const step = installSteps(() => 'token').find((s) => s.id === 'service')!;
    const host: any = { name: 'k3s-agent-1', address: '', role: 'agent' };
    const ctx: any = { facts: { get: () => undefined } };
    const probes = step.probe!(host, ctx) as Record<string, { command: string }>;
    expect(probes.cursor.command).toBe('journalctl -u k3s-agent.service -n 0 --show-cursor -q --no-pager');
    const answer = (stdout: string) => ({ code: 0, stdout, stderr: '' });
    const probe = { enabled: answer('enabled\n'), active: answer('active\n'), cursor: answer('-- cursor: s=0a1b;i=2c3d;b=4e5f;m=6a;t=7b;x=8c\n') };
    const plan = step.plan({ host, ctx, local: undefined, probe } as any) as any;
    expect(plan).toEqual({ changes: [], facts: [journalCursor('s=0a1b;i=2c3d;b=4e5f;m=6a;t=7b;x=8c')] });
  });
});

describe('a running node restarted only by the rolling change', () => {
  const answer = (stdout: string) => ({ code: 0, stdout, stderr: '' });
  const host: any = { name: 'k3s-agent-1', address: '', role: 'agent' };
  const unitStep = installSteps(() => 'token').find((s) => s.id === 'unit')!;
  const plan = (o: { active: string; leftOut?: boolean; unit: string }) =>
    unitStep.plan({
      host,
      local: undefined,
      ctx: { facts: { run: (f: unknown) => (f === rollingLeftOut ? o.leftOut : undefined), get: () => undefined } },
      probe: { file: answer(`644\n${o.unit}`), k3sActive: answer(`${o.active}\n`) },
    } as any) as any;
  const current = (unitStep.probe!(host, { facts: { get: () => undefined } } as any) as Record<string, { command: string }>).k3sActive.command;

  it("asks whether k3s runs with the service step's own probe (asked once for both)", () => {
    expect(current).toBe('systemctl is-active k3s-agent.service');
  });

  it('reads the answer as the service step does: active, activating and reloading run; the service step restarts them', () => {
    const serviceStep = installSteps(() => 'token').find((s) => s.id === 'service')!;
    const serviceProbe = serviceStep.probe!(host, { facts: { get: () => undefined } } as any) as Record<string, { command: string }>;
    expect(serviceProbe.active.command).toBe(current);
    const service = (active: string) =>
      (
        serviceStep.plan({
          host,
          local: undefined,
          ctx: { facts: { get: (_h: string, f: { key: string }) => (f.key === configChanged.key ? true : undefined), run: () => undefined } },
          probe: { enabled: answer('enabled\n'), active: answer(`${active}\n`), cursor: answer('-- cursor: s=1\n') },
        } as any) as any
      ).changes.map((c: { command: string }) => c.command);
    for (const state of ['active', 'activating', 'reloading']) {
      expect(plan({ active: state, leftOut: true, unit: 'an old unit\n' }).stops, state).toHaveLength(1);
      expect(service(state), state).toEqual(['systemctl restart --no-block k3s-agent.service']);
    }
    for (const state of ['inactive', 'failed', 'deactivating']) {
      expect(plan({ active: state, leftOut: true, unit: 'an old unit\n' }).stops, state).toBeUndefined();
      expect(service(state), state).toEqual(['systemctl start --no-block k3s-agent.service']);
    }
  });

  it('a changed unit on a running node, the rolling phases left out: RESTART_NEEDS_ROLLING, nothing written', () => {
    const p = plan({ active: 'active', leftOut: true, unit: '[Unit]\nan old unit\n' });
    expect(p.changes).toEqual([]);
    expect(p.stops).toHaveLength(1);
    expect(p.stops[0]).toMatchObject({ causeId: 'RESTART_NEEDS_ROLLING', host: 'k3s-agent-1' });
    expect(p.stops[0].evidence.seen).toContain('k3s-agent.service is active on k3s-agent-1');
  });

  it('writes as before where k3s does not run, where the rolling phases are in the run, and stops nowhere without a change', () => {
    expect(plan({ active: 'inactive', leftOut: true, unit: 'an old unit\n' }).changes).toHaveLength(1);
    expect(plan({ active: 'active', leftOut: false, unit: 'an old unit\n' }).changes).toHaveLength(1);
    const unchanged = plan({ active: 'active', leftOut: false, unit: 'x' }).changes[0].content;
    const same = plan({ active: 'active', leftOut: true, unit: unchanged });
    expect(same).not.toHaveProperty('stops');
    expect(same.changes).toEqual([]);
  });

  it('a build leaves the rolling change out when its phases do not include rolling-servers', () => {
    const phases = validatedOrder(allPhases());
    const facts = (ids: string[]) =>
      withRollingOptions({ phases: phases.filter((p) => ids.includes(p.id)) } as unknown as RunPlan, { backup: true, backupId: 'b' }).facts;
    expect(facts(phases.map((p) => p.id))).toContainEqual(rollingLeftOut(false));
    expect(facts(['agents'])).toContainEqual(rollingLeftOut(true));
    expect(facts(['rolling-agents', 'k3s-founder', 'k3s-join', 'kube-vip', 'agents'])).toContainEqual(rollingLeftOut(true));
  });
});
