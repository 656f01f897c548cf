// A change of a plan that writes one object through the Kubernetes API over the run's SSH connection
// (src/kube/api-read.ts apiPatch, `k3s kubectl` on the server without a kubeconfig): an action whose one request
// check mode shows in apiShown's words. A refusal is APPLY_FAILED with kubectl's words, as the failed `k3s
// kubectl` command was; a connection lost under the fallback is SSH_UNREACHABLE, as for any command.
import type { ActionChange } from '../engine/changes.ts';
import { applyFailed } from '../engine/apply.ts';
import { connectionLost } from '../transport/lost.ts';
import { lastLines } from '../util/text.ts';
import { apiPatch, apiShown, type ApiPatch } from './api-read.ts';

/** `via`: the host the step runs on, as the plan names it (the request goes through its connection). */
export function apiPatchChange(description: string, write: ApiPatch, via: string): ActionChange {
  const shown = apiShown('PATCH', write, via);
  return {
    kind: 'action',
    description,
    runs: [shown],
    run: async (ctx) => {
      const r = await apiPatch(ctx, ctx.host, write);
      if ('lost' in r && r.lost) throw connectionLost(ctx.host.name, shown);
      if (r.code === 0) return;
      throw applyFailed(
        ctx.host.name,
        shown,
        r.code,
        r.stderr || r.stdout,
        r.code === null ? undefined : lastLines(r.stderr || r.stdout, 1).trim() || undefined,
      );
    },
  };
}
