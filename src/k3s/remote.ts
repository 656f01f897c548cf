// Reading k3s's state on a server over its SSH connection: its API through `k3s kubectl`, its journal.
import type { RunContext } from '../engine/context.ts';
import type { HostRef, ProbeCommand } from '../engine/phase.ts';
import type { ExecResult } from '../transport/types.ts';
import { shq } from '../util/shell.ts';
import { roleOf } from './paths.ts';
import { lastLines } from '../util/text.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE } from '../addons/kube-vip.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

// async: a host that is not connected (down) becomes a rejected promise the caller can catch, not a throw.
/** kubectl's refusal of a missing object (`Error from server (NotFound): nodes "x" not found`). */
export const NOT_FOUND = /NotFound|not found/;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { NOT_FOUND };

/**
 * `/readyz` of the API server at `address`, asked from the host it runs on with k3s's admin kubeconfig (the
 * server's own CA and credentials; the address must be a SAN: the VIP or a server's). One command for every
 * place that asks it: the rolling change's quorum check and hand-over, verify's API check and the drill.
 */
export const readyzVia = (address: string, port: number, timeoutS = 5) =>
  `k3s kubectl --server https://${address}:${port} get --raw /readyz --request-timeout=${timeoutS}s`;

/** Who holds kube-vip's lease (its holderIdentity, a node name), as `k3s kubectl` arguments. */
export const VIP_HOLDER_ARGS = `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o jsonpath='{.spec.holderIdentity}' --request-timeout=5s`;

/** The same read for src/kube/api-read.ts apiRead (through the run's SSH connection, VIP_HOLDER_ARGS without it). */
export const VIP_HOLDER_READ = {
  path: `/apis/coordination.k8s.io/v1/namespaces/${KUBE_VIP_NAMESPACE}/leases/${KUBE_VIP_LEASE}`,
  kubectl: VIP_HOLDER_ARGS,
  print: (lease: any) => String(lease?.spec?.holderIdentity ?? ''),
};

/**
 * A probe that GETs `path` of the API (an object, a list, k3s's /db/info): `k3s kubectl get --raw` on the
 * server, or the same GET through the run's SSH connection to it (ProbeCommand.api). Either prints the API's
 * JSON body on success, and on a refusal exits 1 with `Error from server (<reason>): <message>` (a missing
 * object: NotFound).
 */
export function rawGetProbe(path: string, o: { onlyIf?: string } = {}): ProbeCommand {
  const get = `k3s kubectl get --raw ${shq(path)} --request-timeout=5s`;
  // `onlyIf`: the host asks only when this holds (k3s runs there), so it starts no k3s process for nothing.
  return { command: o.onlyIf ? `${o.onlyIf} && ${get}` : get, sudo: true, api: path };
}

/**
 * A raw GET's (rawGetProbe's) answer that the object is not there: the API's NotFound, in kubectl's words
 * (kubernetes/kubectl pkg/cmd/util/helpers.go StandardErrorMessage: `Error from server (NotFound): …`) as
 * src/kube/api-read.ts gives them too. Not a host without k3s (`k3s: not found`) nor an API that did not answer.
 */
export const refusedNotFound = (r: { code: number | null; stderr: string }) =>
  r.code !== null && r.code !== 0 && r.stderr.includes('Error from server (NotFound)');

/** kubectl's verbs that only read: the run's probe answers stay good (src/engine/probe-memo.ts). */
const READ_VERBS = new Set(['get', 'logs', 'describe', 'version', 'api-resources']);

export async function kubectl(ctx: RunContext, host: HostRef, args: string, timeoutMs = 15_000): Promise<ExecResult> {
  return ctx.remote(host).exec(`k3s kubectl ${args}`, { sudo: true, timeoutMs, signal: ctx.signal, readOnly: READ_VERBS.has(args.trim().split(' ')[0]) });
}

/** k3s's journal on `host` after `cursor` (from the service step's probe), or its last lines. */
export async function journalSince(ctx: RunContext, host: HostRef, cursor: string | undefined, lines = 300): Promise<string> {
  const where = cursor ? `--after-cursor=${shq(cursor)}` : `-n ${lines}`;
  const res = await ctx.remote(host).exec(`journalctl -u ${roleOf(host).unit} ${where} --no-pager -o cat | tail -n ${lines}`, {
    sudo: true,
    timeoutMs: 15_000,
    signal: ctx.signal,
    readOnly: true,
  });
  return res.stdout;
}

/** The last `n` lines, for evidence (25 unless told). */
export function excerpt(text: string, n = 25): string {
  return lastLines(text, n);
}
