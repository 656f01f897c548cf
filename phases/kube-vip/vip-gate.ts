// The VIP gate: the control-plane VIP answers on its port with a certificate that verifies against the
// cluster CA — from every server, and from the operator's side, so a bastion or NAT in between does not
// matter. While the run holds the admin kubeconfig, each server's look is a GET of /livez from the engine
// through the SSH connection to that server (src/kube/get-through.ts: the server's sshd opens the TCP
// connection, so the way to the VIP is the server's own; no process is started there), verified against the
// kubeconfig's cluster CA; the founder's GET is also the operator's side (the engine's TLS, through the SSH
// connection to the founder). Without it, each server runs `k3s kubectl --server https://VIP:port` (its
// k3s.yaml carries the cluster CA), and the operator's side is a TLS handshake from the engine through the
// founder's connection. When it does not answer, the cause is named from what is seen (kube-vip's log, the
// lease, RBAC, the certificate), never a generic timeout.
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { Gate, HostRef } from '../../src/engine/phase.ts';
import { handshakeVia } from '../../src/kube/handshake.ts';
import { getThrough, type ApiCredentials } from '../../src/kube/get-through.ts';
import { apiCredentialsOf } from '../../src/kube/reads-through.ts';
import type { Remote } from '../../src/transport/types.ts';
import { founderRef } from '../../src/inventory/hosts.ts';
import { excerpt, NOT_FOUND, VIP_HOLDER_READ } from '../../src/k3s/remote.ts';
import { apiRead, podLogPath } from '../../src/kube/api-read.ts';
import { poll } from '../../src/engine/poll.ts';
import { SERVER_CA } from '../../src/k3s/paths.ts';
import { podsPullCause } from '../../src/images/pods.ts';
import { matchKubeVipLog } from './log-causes.ts';
import { KUBE_VIP_DAEMONSET, KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../../src/addons/kube-vip.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

const POLL_MS = 2_000;

type Answer = { ok: true } | { ok: false; certificate: boolean; seen: string; command: string; exitCode?: number | null };

export const livezCommand = (vip: string, port: number) => `k3s kubectl --server https://${vip}:${port} get --raw /livez --request-timeout=5s`;

/** kubectl's words for an answer of the API (`Error from server (<reason>): …`, `Error from server: …`). */
const HTTP_ERROR = /^Error from server\b/m;
/** Go's words for a certificate that does not verify (`x509: …`, since Go 1.20 after `tls: failed to verify certificate: `). */
const CERTIFICATE_ERROR = /x509: |tls: failed to verify certificate/;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { HTTP_ERROR, CERTIFICATE_ERROR };

/**
 * Pure: what `k3s kubectl get --raw /livez` through the VIP printed. "ok" is an answer; so is any HTTP error
 * ("Error from server (…)": the certificate verified, then the API refused). kubectl names a certificate that
 * does not verify with Go's x509 words ("x509: certificate is valid for …, not …", "x509: certificate signed
 * by unknown authority", since Go 1.20 prefixed "tls: failed to verify certificate: ").
 */
export function livezAnswer(res: { code: number | null; stdout: string; stderr: string }): { ok: true } | { ok: false; certificate: boolean; said: string } {
  if (res.code === 0 && res.stdout.trim() === 'ok') return { ok: true };
  const said = (res.stderr || res.stdout).trim().split('\n').filter(Boolean).at(-1) ?? '';
  if (res.code !== 0 && HTTP_ERROR.test(res.stderr)) return { ok: true };
  return {
    ok: false,
    certificate: CERTIFICATE_ERROR.test(res.stderr),
    said: said || (res.code === null ? 'no answer' : `kubectl exit ${res.code}`),
  };
}

/**
 * A GET of /livez at the VIP from a host, through the run's SSH connection to it, verified against the cluster
 * CA, read as livezAnswer reads kubectl's: 200 "ok" is an answer; so is any HTTP error (kubectl's "Error from
 * server (…)": the certificate verified, then the API refused or failed). `certificate`: Node's TLS error
 * code says the serving certificate does not verify (the VIP not among its SANs, another CA).
 */
export async function livezThrough(
  remote: Remote,
  vip: string,
  port: number,
  creds: ApiCredentials,
  timeoutMs = 5_000,
): Promise<{ ok: true } | { ok: false; certificate: boolean; said: string }> {
  const got = await getThrough(remote, vip, port, '/livez', creds, timeoutMs);
  if (got.status === undefined) return { ok: false, certificate: got.certificate, said: got.seen };
  if (got.status !== 200 || got.body.trim() === 'ok') return { ok: true };
  return { ok: false, certificate: false, said: `HTTP 200: ${got.body.trim().split('\n').at(-1)?.slice(0, 300) ?? ''}` };
}

/** The evidence of a look through the SSH connection to `server`: what the engine did, and the same by hand. */
const livezThroughWords = (vip: string, port: number, server: string) =>
  `GET https://${vip}:${port}/livez from ${server} (the engine, through its SSH connection to ${server}), verifying the cluster CA; by hand on ${server}: sudo ${livezCommand(vip, port)}`;

/**
 * From a server: with the admin kubeconfig, the engine's GET through the SSH connection to it; without, k3s's
 * kubectl through the VIP on it, verifying the cluster CA from k3s.yaml.
 */
async function answerFromServer(ctx: RunContext, host: HostRef, creds: ApiCredentials | undefined): Promise<Answer> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  if (creds) {
    const a = await livezThrough(ctx.remote(host), vip, port, creds);
    return a.ok ? a : { ok: false, certificate: a.certificate, seen: `from ${host.name}: ${a.said}`, command: livezThroughWords(vip, port, host.name) };
  }
  const command = livezCommand(vip, port);
  const res = await ctx.remote(host).exec(command, { sudo: true, timeoutMs: 15_000, signal: ctx.signal, readOnly: true });
  const a = livezAnswer(res);
  if (a.ok) return a;
  return { ok: false, certificate: a.certificate, seen: `from ${host.name}: ${a.said}`, command, exitCode: res.code };
}

/** From the operator's side: a TLS handshake to the VIP through the SSH connection to the founder, verifying the CA read from it. */
async function answerFromOperator(ctx: RunContext, founder: HostRef, ca: string): Promise<Answer> {
  const { host, port } = ctx.inventory.derived.apiEndpoint;
  const command = `TLS handshake from the engine to ${host}:${port} through the SSH connection to ${founder.name}, verifying the cluster CA`;
  const h = await handshakeVia(ctx.remote(founder), host, port, ca);
  return h.ok ? h : { ok: false, certificate: h.certificate, seen: `from the operator: ${h.seen}`, command };
}

/**
 * The last lines of each kube-vip pod's log, as `kubectl logs -l <selector> --tail=40 --prefix` prints them: each
 * line after `[pod/<pod>/<container>] ` (kubernetes/kubectl pkg/cmd/logs/logs.go addPrefixIfNeeded), at most five
 * pods (its --max-log-requests default). A pod whose log cannot be read adds nothing.
 */
async function prefixedLogs(ctx: RunContext, founder: HostRef, pods: any[]): Promise<string> {
  const texts = await Promise.all(
    pods.slice(0, 5).map(async (p) => {
      const pod = String(p?.metadata?.name ?? '');
      const container = String(p?.spec?.containers?.[0]?.name ?? '');
      const r = await apiRead(ctx, founder, {
        path: podLogPath(KUBE_VIP_NAMESPACE, pod, container, 40),
        kubectl: `logs -n ${KUBE_VIP_NAMESPACE} ${pod} -c ${container} --tail=40`,
      }).catch(() => undefined);
      if (r?.code !== 0 || !r.stdout) return '';
      return r.stdout
        .replace(/\n$/, '')
        .split('\n')
        .map((l) => `[pod/${pod}/${container}] ${l}`)
        .join('\n');
    }),
  );
  return texts.filter(Boolean).join('\n');
}

/** What kube-vip says and holds, to name the cause. `final`: the budget is spent. */
async function diagnose(ctx: RunContext, host: HostRef, last: Answer & { ok: false }, final = false): Promise<CauseError> {
  const founder = founderRef(ctx.inventory)[0];
  // A pod whose image is on no node never logs: name the image before reading logs that do not exist.
  const selector = `app.kubernetes.io/name=${KUBE_VIP_DAEMONSET}`;
  const pods = await apiRead(ctx, founder, {
    path: `/api/v1/namespaces/${KUBE_VIP_NAMESPACE}/pods?labelSelector=${encodeURIComponent(selector)}`,
    kubectl: `get pods -n ${KUBE_VIP_NAMESPACE} -l ${selector} -o json`,
  }).catch(() => undefined);
  const items: any[] = pods?.code === 0 ? (JSON.parse(pods.stdout).items ?? []) : [];
  const pull = pods?.code === 0 ? podsPullCause(ctx, items) : undefined;
  if (pull && (pull.decided || final)) return pull.cause;
  const logText = await prefixedLogs(ctx, founder, items);
  const known = matchKubeVipLog(logText, ctx.inventory.derived.serviceAddresses.kubernetes);
  if (known)
    return new CauseError(known.causeId, {
      host: host.name,
      evidence: {
        command: `kubectl logs -n ${KUBE_VIP_NAMESPACE} -l app.kubernetes.io/name=${KUBE_VIP_DAEMONSET}`,
        seen: known.line,
        excerpt: excerpt(logText, 15),
      },
    });
  if (last.certificate)
    return new CauseError('VIP_CERT_MISSING_SAN', { host: host.name, evidence: { command: last.command, exitCode: last.exitCode, seen: last.seen } });
  const rbac = await apiRead(ctx, founder, {
    path: '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:kube-vip-role',
    kubectl: 'get clusterrole system:kube-vip-role -o name',
  }).catch(() => undefined);
  if (rbac && rbac.code !== 0 && NOT_FOUND.test(rbac.stderr)) {
    return new CauseError('KUBE_VIP_RBAC_MISSING', {
      host: host.name,
      evidence: { command: 'kubectl get clusterrole system:kube-vip-role', exitCode: rbac.code, seen: rbac.stderr.trim() },
    });
  }
  const lease = await apiRead(ctx, founder, VIP_HOLDER_READ).catch(() => undefined);
  const holder = lease?.code === 0 ? lease.stdout.trim() : '';
  if (!holder) {
    return new CauseError('VIP_LEASE_NOT_HELD', {
      host: host.name,
      evidence: {
        command: `kubectl get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE}`,
        seen: `no holder; ${last.seen}`,
        excerpt: excerpt(logText, 15) || '(no kube-vip log)',
      },
    });
  }
  return new CauseError('VIP_NOT_ANSWERING', {
    host: host.name,
    evidence: { command: last.command, exitCode: last.exitCode, seen: `the lease is held by ${holder}, but ${last.seen}` },
  });
}

/** Budget: k3s applies the manifest, kube-vip starts and one lease duration passes, with a wide margin. */
const VIP_BUDGET_MS = 60_000 + LEASE_TIMING.duration * 4_000;
/**
 * The end of the budget kept for naming the cause: a look may take its 15 s (kubectl through the VIP), then
 * the diagnosis reads the pods, kube-vip's log, its RBAC and the lease, all before the budget ends.
 */
const DIAGNOSIS_RESERVE_MS = 25_000;

export const vipAnswers: Gate = {
  id: 'vip-answers',
  title: 'control-plane VIP answers with the cluster certificate',
  budgetMs: VIP_BUDGET_MS,
  async run(host, ctx, signal) {
    const creds = await apiCredentialsOf(ctx);
    // The operator's side is checked once, by the founder's gate: with the admin kubeconfig, the founder's GET
    // is the engine's TLS through the founder's connection already; without, a handshake of its own.
    const handshake = host.founder && !creds;
    const ca = handshake ? (await ctx.remote(host).exec(`cat ${SERVER_CA}`, { readOnly: true, sudo: true, timeoutMs: 15_000 })).stdout : '';
    let last: Answer = { ok: false, certificate: false, seen: 'not tried', command: '' };
    const answered = await poll(ctx, signal, {
      everyMs: POLL_MS,
      withinMs: VIP_BUDGET_MS - DIAGNOSIS_RESERVE_MS,
      look: async () => {
        last = await answerFromServer(ctx, host, creds);
        if (last.ok && handshake) last = await answerFromOperator(ctx, host, ca);
        if (last.ok) return true;
        // A known failure in kube-vip's log needs no waiting out.
        const early = await diagnose(ctx, host, last);
        if (early.causeId !== 'VIP_LEASE_NOT_HELD' && early.causeId !== 'VIP_NOT_ANSWERING') throw early;
        return undefined;
      },
    });
    if (answered) return;
    throw await diagnose(ctx, host, last as Answer & { ok: false }, true);
  },
};
