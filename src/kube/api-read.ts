// A gate's read of the cluster, answered as `k3s kubectl get … -o json` on a server answers it (exit 0 and the
// JSON; else exit 1 and kubectl's `Error from server (<reason>): <message>`), but through the run's SSH
// connection to that server (src/kube/get-through.ts): the API's own JSON, no k3s binary started on the host
// for each read. While the state folder holds no kubeconfig (a state folder of another machine), it is
// `k3s kubectl` on the server, as src/kube/reads-through.ts falls back.
import type { ApiGet, RunContext } from '../engine/context.ts';
import type { ApiReads } from '../engine/probe-types.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { kubectl, readyzVia } from '../k3s/remote.ts';
import type { CommandLog } from '../transport/types.ts';
import { getThrough, OWN_API, readyzThrough } from './get-through.ts';
import { objectsOf } from './resources.ts';
import { apiCredentialsOf } from './reads-through.ts';

export interface ApiRead {
  /** The API path, query included (`/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dcilium`). */
  path: string;
  /** The same read as `k3s kubectl` arguments (`get pods -n kube-system -l k8s-app=cilium -o json`). */
  kubectl: string;
  /**
   * Asked as a Table of the objects' metadata (what kubectl's get asks for its own printing): a Secret's data
   * never leaves the server. `print` then reads the objects with objectsOf.
   */
  table?: boolean;
  /** What kubectl's `-o jsonpath=…` prints of the answer (the answer's stdout), when the read asks for fields. */
  print?: (body: any) => string;
}

/**
 * A container's last lines, as `kubectl logs -n <namespace> <pod> -c <container> --tail=<lines>` asks them (the pod's
 * log subresource: its body is the text). While the container waits to restart, the kubelet serves the run
 * that exited last.
 */
export const podLogPath = (namespace: string, pod: string, container: string, lines: number) =>
  `/api/v1/namespaces/${namespace}/pods/${pod}/log?container=${encodeURIComponent(container)}&tailLines=${lines}`;

/** The objects' names, space-separated, as `-o jsonpath='{.items[*].metadata.name}'` prints them (a `print`). */
export const namesOf = (body: any): string =>
  objectsOf(body)
    .map((o) => o?.metadata?.name ?? '')
    .join(' ');

/** What a read answered, in the shape of the `k3s kubectl` command it stands for (exit status, stdout, stderr). */
export type Answer = { code: number | null; stdout: string; stderr: string };

/**
 * kubectl's words for an answer of the API that is not a success (kubernetes/kubectl pkg/cmd/util/helpers.go
 * StandardErrorMessage): the Status's reason and message.
 */
export function errorFromServer(status: number, body: string): string {
  try {
    const s = JSON.parse(body);
    // Unauthorized has words of its own there.
    if (s?.kind === 'Status' && typeof s.message === 'string') {
      if (s.reason === 'Unauthorized') return `error: You must be logged in to the server (${s.message})`;
      return s.reason ? `Error from server (${s.reason}): ${s.message}` : `Error from server: ${s.message}`;
    }
  } catch {
    // Not a Status: the body's first line, below.
  }
  return `Error from server: an error on the server (HTTP ${status}): ${body.trim().split('\n')[0]?.slice(0, 300) ?? ''}`;
}

/**
 * `answer`, recorded in the run log as the command it stands for would be (a request through `host`'s SSH connection
 * that started at `started`): the request line, what it answered in kubectl's shape. Only what came through the
 * API: a fallback to `k3s kubectl` is recorded as the command it is.
 */
export function logged<T extends Answer>(ctx: RunContext, host: HostRef, request: string, started: number, answer: T): T {
  ctx.log?.record({
    host: host.name,
    command: `${request}   (through the SSH connection to ${host.name})`,
    code: answer.code,
    stdout: answer.stdout,
    stderr: answer.stderr,
    durationMs: ctx.clock.now() - started,
  });
  return answer;
}

/** An answer of the API as `k3s kubectl get` gives it: exit 0 and the body, or exit 1 and kubectl's words. */
function answerOf(got: { status: number; body: string }): Answer & { code: number } {
  return got.status === 200 ? { code: 0, stdout: got.body, stderr: '' } : { code: 1, stdout: '', stderr: errorFromServer(got.status, got.body) };
}

export async function apiRead(ctx: RunContext, server: HostRef, read: ApiRead, timeoutMs = 15_000): Promise<Answer> {
  const creds = await apiCredentialsOf(ctx);
  if (!creds) return kubectl(ctx, server, read.kubectl, timeoutMs);
  const path = read.table ? withQuery(read.path, 'includeObject=Metadata') : read.path;
  const started = ctx.clock.now();
  const got = await getThrough(ctx.remote(server), OWN_API.address, OWN_API.port, path, creds, timeoutMs, { accept: read.table ? TABLE_ACCEPT : undefined });
  // No answer (nothing listening yet, a certificate of another cluster: a state folder's kubeconfig from before a
  // rebuild): the server's own kubectl, with k3s's kubeconfig, decides and says why in its words.
  if (got.status === undefined) return kubectl(ctx, server, read.kubectl, timeoutMs);
  return logged(ctx, server, `GET ${path}`, started, read.print ? printed([got], ([body]) => read.print!(body)) : answerOf(got));
}

/**
 * `/readyz` of the API at `address`:`port` as `via` reaches it (its sshd opens the connection; the engine speaks
 * TLS with the admin kubeconfig, the server's certificate checked against the cluster CA), answered as
 * `k3s kubectl --server https://<address>:<port> get --raw /readyz` on `via` answers (exit 0 and `ok`, else exit 1
 * and what was seen), which is what runs there without a usable kubeconfig. No answer is an answer here (an API
 * that is down, a VIP nobody holds): not asked again through kubectl.
 */
export async function readyzFrom(ctx: RunContext, via: HostRef, address: string, port: number, timeoutMs = 10_000): Promise<Answer> {
  const creds = await apiCredentialsOf(ctx);
  if (!creds)
    return ctx
      .remote(via)
      .exec(readyzVia(address, port, Math.max(1, Math.floor(timeoutMs / 2000))), { readOnly: true, sudo: true, timeoutMs, signal: ctx.signal });
  const started = ctx.clock.now();
  const r = await readyzThrough(ctx.remote(via), address, port, creds, timeoutMs);
  return logged(
    ctx,
    via,
    `GET https://${address}:${port}/readyz`,
    started,
    r.ok ? { code: 0, stdout: 'ok', stderr: '' } : { code: 1, stdout: '', stderr: r.seen },
  );
}

/**
 * A DELETE of one object through the run's SSH connection to `server`, answered as `k3s kubectl delete <kind>
 * <name> --ignore-not-found` answers: exit 0 with kubectl's `<kind> "<name>" deleted` (nothing when it was not
 * there), else exit 1 and kubectl's words. Not waited for: an object held by a finalizer is marked and goes
 * later (the caller waits for it to be gone). Without a usable kubeconfig or an answer, `k3s kubectl` on the
 * server (`kubectl`: its arguments) does it.
 */
export async function apiDelete(ctx: RunContext, server: HostRef, del: ApiRead, timeoutMs = 15_000): Promise<Answer> {
  const creds = await apiCredentialsOf(ctx);
  if (!creds) return kubectl(ctx, server, del.kubectl, timeoutMs);
  // The API answers a DELETE at once (it does not wait for finalizers, as kubectl's --timeout does): a short
  // wait for that answer, so that kubectl's attempt after no answer still fits the caller's budget.
  const started = ctx.clock.now();
  const got = await getThrough(ctx.remote(server), OWN_API.address, OWN_API.port, del.path, creds, Math.min(timeoutMs, 15_000), { method: 'DELETE' });
  ctx.probeMemo?.forget();
  if (got.status === undefined) return kubectl(ctx, server, del.kubectl, timeoutMs);
  const answer =
    got.status === 404
      ? { code: 0, stdout: '', stderr: '' }
      : got.status !== 200 && got.status !== 202
        ? answerOf(got)
        : { code: 0, stdout: deletedWords(got.body, del.path), stderr: '' };
  return logged(ctx, server, `DELETE ${del.path}`, started, answer);
}

/**
 * What a plan says a request runs on `via`: the API's request (a PATCH with its patch), and kubectl's arguments
 * where it falls back.
 */
export function apiShown(method: 'GET' | 'DELETE' | 'PATCH', request: Pick<ApiRead, 'path' | 'kubectl'> & { patch?: unknown }, via: string): string {
  const body = request.patch === undefined ? '' : ` ${JSON.stringify(request.patch)}`;
  return `${method} ${request.path}${body}   (Kubernetes API through the SSH connection to ${via}; without the state folder's kubeconfig: sudo k3s kubectl ${request.kubectl} there)`;
}

/** A PATCH of one object: its path, the patch, and the same write as `k3s kubectl` arguments. */
export interface ApiPatch {
  path: string;
  /** `merge`: a JSON merge patch (RFC 7386, what `kubectl patch --type merge` and `kubectl annotate` send); `json`: a JSON patch (RFC 6902). */
  type: 'merge' | 'json';
  patch: unknown;
  /** kubectl's word for it: `annotated` (kubectl annotate) or `patched` (kubectl patch). */
  verb: 'annotated' | 'patched';
  kubectl: string;
}

const PATCH_TYPES = { merge: 'application/merge-patch+json', json: 'application/json-patch+json' } as const;

/**
 * A PATCH of one object through the run's SSH connection to `server`, answered as `k3s kubectl patch` (or
 * `annotate`) answers: exit 0 with kubectl's `<kind>[.<group>]/<name> patched`, else exit 1 and kubectl's words
 * (a refused resourceVersion: `Error from server (Conflict): …`). Without a usable kubeconfig or an answer (nothing forwarded, another
 * cluster's certificate), `k3s kubectl` on the server does it: a write whose answer was lost on the way is then
 * sent again, which each caller's patch tolerates (an annotation, a compare-and-swap on a resourceVersion, a
 * `test` before a removal).
 */
export async function apiPatch(ctx: RunContext, server: HostRef, write: ApiPatch, timeoutMs = 15_000): Promise<Answer> {
  const creds = await apiCredentialsOf(ctx);
  if (!creds) return kubectl(ctx, server, write.kubectl, timeoutMs);
  const started = ctx.clock.now();
  const got = await getThrough(ctx.remote(server), OWN_API.address, OWN_API.port, write.path, creds, Math.min(timeoutMs, 15_000), {
    method: 'PATCH',
    body: { type: PATCH_TYPES[write.type], text: JSON.stringify(write.patch) },
  });
  // A write may have changed what the run's probes saw (src/engine/probe-memo.ts).
  ctx.probeMemo?.forget();
  if (got.status === undefined) return kubectl(ctx, server, write.kubectl, timeoutMs);
  // The patch itself is not recorded: the request line and the answer say what was written.
  return logged(
    ctx,
    server,
    `PATCH ${write.path} (${PATCH_TYPES[write.type]})`,
    started,
    got.status !== 200 ? answerOf(got) : { code: 0, stdout: namedWords(got.body, write.verb), stderr: '' },
  );
}

/**
 * kubectl's line for a written object (kubernetes/cli-runtime pkg/printers/name.go printObj: `<kind>/<name>
 * <operation>`, the kind lower-case and followed by `.<group>` when it has one), from the object the API answered.
 */
function namedWords(body: string, verb: string): string {
  try {
    return printedName(JSON.parse(body), verb);
  } catch {
    return '';
  }
}

/** printObj's line for `o` (its apiVersion, kind and name): `<kind>[.<group>]/<name> <verb>`; nothing without a kind and a name. */
export function printedName(o: any, verb: string): string {
  const group = String(o?.apiVersion ?? '')
    .split('/')
    .slice(0, -1)
    .join('/');
  const kind = String(o?.kind ?? '').toLowerCase();
  return kind && o?.metadata?.name ? `${group ? `${kind}.${group}` : kind}/${o.metadata.name} ${verb}` : '';
}

/**
 * kubectl's line for a deleted object (kubernetes/kubectl pkg/cmd/delete/delete.go, DeleteOptions.PrintObj on
 * its main branch: `<kind>[.<group>] "<name>" deleted`, and ` from <namespace> namespace` after it for a
 * namespaced object; which release first added that suffix is not pinned here), from the API's answer: the
 * object (held by a finalizer, or as the server returns it) or a Status whose details name it; the namespace
 * from the request's path.
 */
function deletedWords(body: string, path: string): string {
  try {
    const o = JSON.parse(body);
    const status = o?.kind === 'Status';
    const kind = status ? String(o.details?.kind ?? '').replace(/s$/, '') : String(o?.kind ?? '').toLowerCase();
    const group = status
      ? o.details?.group
      : String(o?.apiVersion ?? '')
          .split('/')
          .slice(0, -1)
          .join('/');
    const name = status ? o.details?.name : o?.metadata?.name;
    const segments = path.split('?')[0].split('/');
    const namespace = segments.includes('namespaces') ? segments[segments.indexOf('namespaces') + 1] : undefined;
    if (!kind || !name) return '';
    return `${group ? `${kind}.${group}` : kind} "${name}" deleted${namespace ? ` from ${namespace} namespace` : ''}`;
  } catch {
    return '';
  }
}

/**
 * The run's answers to probes that read the API (RunContext.apiGet): a GET at the host's own API through the
 * run's SSH connection to it, recorded in the run log as the probe's command is. Nothing when the state folder
 * holds no usable kubeconfig or no answer came: the probe then runs on the host, whose own view decides.
 */
export function apiGetOf(ctx: RunContext, log: CommandLog): ApiGet {
  return async (host, read, o) => {
    const creds = await apiCredentialsOf(ctx).catch(() => undefined);
    if (!creds) return undefined;
    // A path alone is one raw GET, its body the answer (no print).
    const { gets, print } = typeof read === 'string' ? { gets: [{ path: read, table: false }], print: undefined } : read;
    const started = ctx.clock.now();
    const got = await Promise.all(
      gets.map((g) =>
        getThrough(
          ctx.remote(host),
          OWN_API.address,
          OWN_API.port,
          g.table ? withQuery(g.path, 'includeObject=Metadata') : g.path,
          creds,
          Math.min(o.timeoutMs, 15_000),
          {
            accept: g.table ? TABLE_ACCEPT : undefined,
          },
        ),
      ),
    );
    if (got.some((g) => g.status === undefined)) return undefined;
    const answer = printed(got as { status: number; body: string }[], print);
    // No shell command: the run log names the requests and where they went; what it shows is what was printed.
    const paths = gets.map((g) => `${g.path}${g.table ? ' (as a Table of metadata)' : ''}`).join(', ');
    log.record({
      host: host.name,
      command: `GET ${paths} (the API at ${OWN_API.address}:${OWN_API.port} on ${host.name}, through the SSH connection)${o.label ? `   # probe ${o.label}` : ''}`,
      code: answer.code,
      stdout: answer.stdout,
      stderr: answer.stderr,
      durationMs: ctx.clock.now() - started,
    });
    return { ...answer, window: { sentMs: started, answeredMs: ctx.clock.now() } };
  };
}

/**
 * The Accept kubectl's get sends for a Table (kubernetes/kubectl pkg/cmd/get/get.go transformRequests), less its
 * meta.k8s.io/v1beta1 alternative: the server-side Table, or plain JSON from a server that prints none (objectsOf
 * reads either); includeObject=Metadata is asked in the query.
 */
export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

const withQuery = (path: string, q: string) => `${path}${path.includes('?') ? '&' : '?'}${q}`;

/**
 * The answers as the probe's command prints them: the first refusal in kubectl's words, else `print` of the
 * bodies (none: the one body as it came).
 */
function printed(got: { status: number; body: string }[], print: ApiReads['print'] | undefined): Answer & { code: number } {
  const refused = got.find((g) => g.status !== 200);
  if (refused || !print) return answerOf(refused ?? got[0]);
  try {
    return { code: 0, stdout: print(got.map((g) => JSON.parse(g.body))), stderr: '' };
  } catch (err) {
    return { code: 1, stdout: '', stderr: `error: the API's answer could not be read: ${(err as Error).message}` };
  }
}

export interface ApiLists {
  /** Each list's API path and the kind of its items (a list of a built-in kind names it on the list only). */
  lists: { path: string; kind: string }[];
  /** The same read as `k3s kubectl` arguments (`get pods,deployments -n flux-system -o json`). */
  kubectl: string;
}

/**
 * Several kinds in one answer, as `k3s kubectl get <kind>,<kind> … -o json` gives them: a List whose items each
 * carry their kind; the first list refused is the answer (kubectl refuses the whole read too).
 */
export async function apiReadLists(ctx: RunContext, server: HostRef, read: ApiLists, timeoutMs = 15_000): Promise<Answer> {
  const creds = await apiCredentialsOf(ctx);
  if (!creds) return kubectl(ctx, server, read.kubectl, timeoutMs);
  const started = ctx.clock.now();
  const got = await Promise.all(read.lists.map((l) => getThrough(ctx.remote(server), OWN_API.address, OWN_API.port, l.path, creds, timeoutMs)));
  // A list with no answer: the whole read is the server's kubectl's, as apiRead's is.
  if (got.some((g) => g.status === undefined)) return kubectl(ctx, server, read.kubectl, timeoutMs);
  const refused = got.find((g) => g.status !== 200);
  const request = `GET ${read.lists.map((l) => l.path).join(', ')}`;
  if (refused && refused.status !== undefined) return logged(ctx, server, request, started, answerOf(refused));
  const items = got.flatMap((g, i) =>
    (g.status === 200 ? ((JSON.parse(g.body).items ?? []) as any[]) : []).map((item) => ({ kind: read.lists[i].kind, ...item })),
  );
  return logged(ctx, server, request, started, { code: 0, stdout: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }), stderr: '' });
}
