// Server-side apply of objects through the Kubernetes API over the run's SSH connection to a server, as
// `k3s kubectl apply --server-side --force-conflicts --field-manager=<manager> -f -` sends them: one PATCH of
// type application/apply-patch+yaml per object (JSON is YAML), `?fieldManager=<manager>&force=true`, in the
// order given, so that a Namespace and the CRDs are in place before what lives in them. No k3s process on the
// server, and the objects (a deploy key's Secret among them) never pass through a shell there.
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { apiCredentialsOf } from './reads-through.ts';
import { getThrough, OWN_API } from './get-through.ts';
import { objectPath } from './resources.ts';
import { errorFromServer, logged, printedName } from './api-read.ts';

export interface ApplyObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

/**
 * `undefined`: the API cannot be asked this way (no usable kubeconfig, a kind whose path is not known without
 * discovery, or no answer to the first request: nothing was applied) and the caller applies with kubectl instead.
 * `failed`: the object the API refused (those before it are applied, those after it are not sent) and the API's
 * words, as kubectl prints them.
 */
export type Applied = { ok: true; count: number } | { ok: false; failed: ApplyObject; said: string };

export async function apiApply(
  ctx: RunContext,
  server: HostRef,
  objects: ApplyObject[],
  fieldManager: string,
  timeoutMs = 30_000,
): Promise<Applied | undefined> {
  const creds = await apiCredentialsOf(ctx);
  const paths = objects.map(objectPath);
  if (!creds || paths.some((p) => !p)) return undefined;
  for (const [i, o] of objects.entries()) {
    const started = ctx.clock.now();
    const request = `PATCH ${paths[i]}?fieldManager=${fieldManager}&force=true (application/apply-patch+yaml)`;
    const got = await getThrough(
      ctx.remote(server),
      OWN_API.address,
      OWN_API.port,
      `${paths[i]}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`,
      creds,
      timeoutMs,
      {
        method: 'PATCH',
        body: { type: 'application/apply-patch+yaml', text: JSON.stringify(o) },
      },
    );
    // Whatever was sent may have changed what the run's probes saw (src/engine/probe-memo.ts).
    ctx.probeMemo?.forget();
    if (got.status === undefined) {
      if (i === 0) return undefined;
      return { ok: false, failed: o, said: `no answer from the API: ${got.seen}` };
    }
    const refused = got.status !== 200 && got.status !== 201;
    // The object's words as kubectl prints them, never the object: a Secret's answer carries its data.
    const words = printedName(o, 'serverside-applied');
    logged(
      ctx,
      server,
      request,
      started,
      refused ? { code: 1, stdout: '', stderr: errorFromServer(got.status, got.body) } : { code: 0, stdout: words, stderr: '' },
    );
    if (refused) return { ok: false, failed: o, said: errorFromServer(got.status, got.body) };
  }
  return { ok: true, count: objects.length };
}
