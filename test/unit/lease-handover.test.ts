// The VIP's hand-over before a rolling restart writes kube-vip's lease to another server as a compare-and-swap
// (src/k3s/vip-handover.ts writeLease). kube-vip renews the lease every second, so a renewal between the
// read and the write is common: the apiserver refuses that write with a 409 Conflict, and it is read and
// written again. Any other refusal ends it at once.
import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import { writeLease } from '../../src/k3s/vip-handover.ts';

const via: HostRef = { name: 's1', address: '10.0.0.10', role: 'server', founder: true };
const target: HostRef = { name: 's3', address: '10.0.0.12', role: 'server', founder: false };
// The apiserver's words for a stale resourceVersion, as kubectl prints them.
const CONFLICT =
  'Error from server (Conflict): Operation cannot be fulfilled on leases.coordination.k8s.io "plndr-cp-lock": the object has been modified; please apply your changes to the latest version and try again';

/** A server whose lease kube-vip (on s2) renewed `renewals` times between a read and the write after it. */
function ctxWith(answers: { patch: (n: number) => { code: number; stderr: string } }) {
  const commands: string[] = [];
  let rv = 100;
  let patches = 0;
  const ctx = {
    clock: { now: () => Date.parse('2026-12-05T07:00:00Z'), sleep: async () => undefined },
    signal: new AbortController().signal,
    remote: () => ({
      exec: async (command: string) => {
        commands.push(command);
        if (command.includes('-o json')) {
          rv += 1;
          return {
            code: 0,
            stderr: '',
            stdout: JSON.stringify({ metadata: { resourceVersion: String(rv) }, spec: { holderIdentity: 's2', leaseTransitions: 4 } }),
          };
        }
        const a = answers.patch(++patches);
        return { code: a.code, stdout: a.code === 0 ? 'lease.coordination.k8s.io/plndr-cp-lock patched' : '', stderr: a.stderr };
      },
    }),
  } as unknown as RunContext;
  return { ctx, commands };
}

describe('the lease handed to another server', () => {
  it('is read and written again when kube-vip renewed it in between, on the resourceVersion just read', async () => {
    const { ctx, commands } = ctxWith({ patch: (n) => (n < 3 ? { code: 1, stderr: CONFLICT } : { code: 0, stderr: '' }) });
    const r = await writeLease(ctx, via, target);
    expect(r).toEqual({ ok: true, said: 'lease written to s3 at attempt 3 (kube-vip renewed it between read and write)' });
    const patches = commands.filter((c) => c.includes('patch lease'));
    expect(patches).toHaveLength(3);
    expect(patches[2]).toContain('"resourceVersion":"103"');
    expect(patches[2]).toContain('"holderIdentity":"s3"');
    expect(patches[2]).toContain('"leaseTransitions":5');
  });

  it('stops at the first refusal that is not a conflict, with kubectl`s words', async () => {
    const forbidden = 'Error from server (Forbidden): leases.coordination.k8s.io "plndr-cp-lock" is forbidden';
    const { ctx, commands } = ctxWith({ patch: () => ({ code: 1, stderr: forbidden }) });
    expect(await writeLease(ctx, via, target)).toEqual({ ok: false, said: `the lease could not be written to s3: ${forbidden}` });
    expect(commands.filter((c) => c.includes('patch lease'))).toHaveLength(1);
  });

  it('gives up after five conflicts in a row and says so', async () => {
    const { ctx } = ctxWith({ patch: () => ({ code: 1, stderr: CONFLICT }) });
    const r = await writeLease(ctx, via, target);
    expect(r.ok).toBe(false);
    expect(r.said).toMatch(/^the lease could not be written to s3: 5 writes refused as conflicts \(Error from server \(Conflict\)/);
  });
});
