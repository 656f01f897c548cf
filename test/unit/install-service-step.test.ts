// The k3s install's service step records where the unit's journal stands, so that its gates read only what
// k3s logs after this point: the cursor is journalctl's own `-- cursor:` line, picked out by the engine.
import { describe, expect, it } from 'vitest';
import { installSteps } from '../../phases/k3s/install-steps.ts';
import { journalCursor } from '../../phases/k3s/facts.ts';

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
