// After the last host of a whole-cluster reset, on the operator's machine: the cluster token and the admin
// kubeconfig of the cluster that is gone are MOVED aside in the state folder (renamed with the time of the
// reset; a rename keeps their 0600), never deleted: a later cold build makes a new token, and an old backup
// still restores with the token it carries. The backups stay where they are. Nothing is moved when the
// reset stopped before its last host, nor by a reset of one node (the cluster stays).
import { existsSync, renameSync } from 'node:fs';
import type { Step } from '../../src/engine/phase.ts';
import { tokenPath } from '../../src/k3s/token.ts';
import { kubeconfigPath } from '../../src/k3s/kubeconfig-file.ts';

/** Where a file of the state folder goes: beside it, with the reset's time (`cluster-token.json.reset-2026-12-05T11-02-03Z`). */
export function asidePath(path: string, nowMs: number): string {
  return `${path}.reset-${new Date(nowMs)
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-')}`;
}

export function moveStateAside(lastHost: string | undefined): Step<{ present: string[] }> {
  return {
    id: 'reset-state',
    title: "the cluster's token and kubeconfig moved aside in the state folder (the backups kept)",
    local: async (_host, ctx) => ({ present: [tokenPath(ctx.stateDir), kubeconfigPath(ctx.stateDir)].filter((p) => existsSync(p)) }),
    plan: ({ host, local, ctx }) => {
      if (host.name !== lastHost || !local.present.length) return { changes: [] };
      const moves = local.present.map((from) => ({ from, to: asidePath(from, ctx.clock.now()) }));
      return {
        changes: [
          {
            kind: 'action',
            description: `move aside on the operator's machine (never deleted; a new build makes a new token): ${moves.map((m) => `${m.from} → ${m.to}`).join(', ')}`,
            runs: [],
            writes: moves.map((m) => m.to),
            run: async () => {
              for (const m of moves) renameSync(m.from, m.to);
            },
          },
        ],
      };
    },
  };
}
