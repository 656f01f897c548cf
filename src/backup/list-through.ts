// The object inventory (src/backup/objects.ts) read through the Kubernetes API over the run's SSH connection
// to a server, printed as listObjectsCommand prints it (`Kind namespace name` a line): discovery first, as
// `kubectl api-resources --verbs=list -o name` reads it (/api/v1, /apis and each group's preferred version;
// the sub-resources left out), then each listable resource cluster-wide as a Table of metadata, so no Secret's
// data leaves the server and no k3s process starts on it. As kubectl api-resources does, a group whose
// discovery fails (an aggregated API that is down) is left out; a resource that fails to list fails the whole
// listing, as the one `kubectl get` of every type does. Without a usable kubeconfig, or no answer at all, the
// command runs on the server instead.
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { eachLimited } from '../util/limit.ts';
import { getThrough, OWN_API, type Got } from '../kube/get-through.ts';
import { errorFromServer, logged, TABLE_ACCEPT, type Answer } from '../kube/api-read.ts';
import { apiCredentialsOf } from '../kube/reads-through.ts';
import { objectsOf } from '../kube/resources.ts';
import { isVolatileResource, listObjectsCommand } from './objects.ts';

/** The listing as a plan and an evidence name it. */
export const LISTING_SHOWN =
  "GET /api/v1, /apis and each group's preferred version, then every listable resource cluster-wide as a Table of metadata (Pods, Events and metrics left out)";

interface Listable {
  /** `kubectl api-resources -o name`'s name: the resource, and `.<group>` for a named group. */
  name: string;
  kind: string;
  path: string;
}

/** How many lists are asked at once (the connection pool to a server's API keeps 8). */
const LISTS_AT_ONCE = 4;

export async function listObjectsThrough(ctx: RunContext, server: HostRef, o: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Answer> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const onHost = () => ctx.remote(server).exec(listObjectsCommand(), { readOnly: true, sudo: true, timeoutMs, signal: o.signal ?? ctx.signal });
  const creds = await apiCredentialsOf(ctx);
  if (!creds) return onHost();
  // The whole listing within timeoutMs (and the caller's signal): each request gets what is left, at most 30 s.
  const deadline = ctx.clock.now() + timeoutMs;
  const signal = o.signal ?? ctx.signal;
  const get = async (path: string, accept?: string): Promise<Got> => {
    const left = deadline - ctx.clock.now();
    if (left <= 0 || signal.aborted) return { tls: false, seen: `the listing did not finish within ${timeoutMs / 1000} s`, certificate: false };
    return getThrough(ctx.remote(server), OWN_API.address, OWN_API.port, path, creds, Math.min(left, 30_000), { accept });
  };
  const started = ctx.clock.now();
  const core = await get('/api/v1');
  if (core.status === undefined) return onHost();
  // A refusal is logged as the whole listing's answer would be: the run log shows why the listing failed.
  const refusal = (stderr: string) => logged(ctx, server, LISTING_SHOWN, started, { code: 1, stdout: '', stderr });
  if (core.status !== 200) return refusal(errorFromServer(core.status, core.body));
  const groups = await get('/apis');
  if (groups.status !== 200) return refusal(groups.status === undefined ? groups.seen : errorFromServer(groups.status, groups.body));
  const listable = [...resourcesOf(JSON.parse(core.body), '', '/api/v1')];
  const preferred: { name: string; groupVersion: string }[] = (JSON.parse(groups.body).groups ?? []).flatMap((g: any) =>
    g?.preferredVersion?.groupVersion ? [{ name: String(g.name), groupVersion: String(g.preferredVersion.groupVersion) }] : [],
  );
  await eachLimited(preferred, LISTS_AT_ONCE, async (g) => {
    const got = await get(`/apis/${g.groupVersion}`);
    // A group that does not answer its discovery is left out, as kubectl api-resources leaves it out.
    if (got.status === 200) listable.push(...resourcesOf(JSON.parse(got.body), g.name, `/apis/${g.groupVersion}`));
  });
  const lines: string[][] = [];
  let refused: string | undefined;
  const wanted = listable.filter((r) => !isVolatileResource(r.name)).map((r, i) => ({ ...r, i }));
  await eachLimited(wanted, LISTS_AT_ONCE, async (r) => {
    if (refused) return;
    const got = await get(`${r.path}?includeObject=Metadata`, TABLE_ACCEPT);
    if (got.status !== 200) {
      refused ??= `${r.name}: ${got.status === undefined ? got.seen : errorFromServer(got.status, got.body)}`;
      return;
    }
    lines[r.i] = objectsOf(JSON.parse(got.body)).map((obj) => `${r.kind} ${obj?.metadata?.namespace ?? ''} ${obj?.metadata?.name ?? ''}`);
  });
  const listing = lines
    .flat()
    .map((l) => `${l}\n`)
    .join('');
  return refused ? refusal(refused) : logged(ctx, server, LISTING_SHOWN, started, { code: 0, stdout: listing, stderr: '' });
}

/** The listable resources of one discovery document (APIResourceList), their list paths cluster-wide. */
function* resourcesOf(doc: any, group: string, base: string): Generator<Listable> {
  for (const r of doc?.resources ?? []) {
    const name = String(r?.name ?? '');
    if (!name || name.includes('/') || !(r.verbs ?? []).includes('list')) continue;
    yield { name: group ? `${name}.${group}` : name, kind: String(r.kind ?? ''), path: `${base}/${name}` };
  }
}
